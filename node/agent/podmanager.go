package agent

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/podutil"
)

// podManager holds the desired pods from every source, by UID.
type podManager struct {
	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
}

func newPodManager() *podManager { return &podManager{pods: map[types.UID]*corev1.Pod{}} }

func (m *podManager) set(p *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pods[p.UID] = p
}

func (m *podManager) remove(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, uid)
}

func (m *podManager) get(uid types.UID) (*corev1.Pod, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pods[uid]
	return p, ok
}

// list returns the pods sorted by namespace/name.
func (m *podManager) list() []*corev1.Pod {
	m.mu.Lock()
	out := make([]*corev1.Pod, 0, len(m.pods))
	for _, p := range m.pods {
		out = append(out, p)
	}
	m.mu.Unlock()
	podutil.SortPods(out)
	return out
}
