package memorymanager

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/cm/topologymanager"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

const gi = 1 << 30

// four NUMA nodes of 2 GiB; node 0 keeps 100 MiB reserved.
var machine = deps.MachineInfo{NUMANodes: []deps.NUMANode{{ID: 0, MemoryBytes: 2 * gi}, {ID: 1, MemoryBytes: 2 * gi}, {ID: 2, MemoryBytes: 2 * gi}, {ID: 3, MemoryBytes: 2 * gi}}}

var static = Config{Policy: PolicyStatic, Reserved: map[int]uint64{0: 100 << 20}, NodeReserved: 100 << 20, RootDir: "/var/lib/lockstep"}

func newManager(t *testing.T, files *memfs.FS, cfg Config) (*Manager, error) {
	t.Helper()
	return New(deps.Core{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, files, cfg, machine)
}

func pod(uid string, qos corev1.PodQOSClass, mem ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid)}}
	for i, m := range mem {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse(m)}
		r := corev1.ResourceRequirements{Requests: l, Limits: l}
		if qos == corev1.PodQOSBurstable {
			r.Limits = nil
		}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Resources: r})
	}
	return p
}

func TestStaticPlacesGuaranteedMemory(t *testing.T) {
	files := memfs.New()
	m, err := newManager(t, files, static)
	if err != nil {
		t.Fatal(err)
	}
	anyNode := topologymanager.Hint{Preferred: true}
	one := topologymanager.NewMask(2)
	a := pod("a", corev1.PodQOSGuaranteed, "1Gi", "1536Mi")
	for i := range a.Spec.Containers {
		aff := anyNode
		if i == 1 {
			aff = topologymanager.Hint{Affinity: &one, Preferred: true}
		}
		if err := m.Allocate(a, &a.Spec.Containers[i], aff); err != nil {
			t.Fatal(err)
		}
	}
	b := pod("b", corev1.PodQOSBurstable, "1Gi")
	if err := m.Allocate(b, &b.Spec.Containers[0], anyNode); err != nil {
		t.Fatal(err)
	}
	// The first block goes to the narrowest, lowest node with room (0:
	// 1.9 GiB free); the second where the topology manager said.
	got := map[string]string{"a/c0": m.Mems("a", "c0"), "a/c1": m.Mems("a", "c1"), "b/c0": m.Mems("b", "c0")}
	if d := cmp.Diff(map[string]string{"a/c0": "0", "a/c1": "2", "b/c0": ""}, got); d != "" {
		t.Errorf("cpuset.mems (-want +got):\n%s", d)
	}
	// 1.5 GiB more fits no single node but 0 (0.9 GiB left) and 2 (0.5)
	// are short: nodes 1 and 3 are whole, so the hints are single nodes.
	c := pod("c", corev1.PodQOSGuaranteed, "1536Mi")
	var hs []string
	for _, h := range m.Hints(c, &c.Spec.Containers[0])["memory"] {
		if h.Preferred {
			hs = append(hs, h.String())
		}
	}
	if d := cmp.Diff([]string{"{{1} true}", "{{3} true}"}, hs); d != "" {
		t.Errorf("preferred hints (-want +got):\n%s", d)
	}
	two := topologymanager.NewMask(0, 2)
	if err := m.Allocate(c, &c.Spec.Containers[0], topologymanager.Hint{Affinity: &two}); err == nil || !strings.Contains(err.Error(), "free") {
		t.Errorf("allocating past two nodes' free memory: %v", err)
	}

	// The checkpoint brings the blocks back; another policy refuses it.
	again, err := newManager(t, files, static)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(m.Blocks(), again.Blocks()); d != "" {
		t.Errorf("restored blocks (-before +after):\n%s", d)
	}
	if _, err := newManager(t, files, Config{Policy: PolicyNone, RootDir: static.RootDir}); err == nil ||
		!strings.Contains(err.Error(), `configured policy "None" differs from state checkpoint policy "Static"`) || !strings.Contains(err.Error(), "memory_manager_state") {
		t.Errorf("policy change: %v", err)
	}
	m.Release(a)
	if len(m.Blocks()) != 0 {
		t.Errorf("blocks after release: %v", m.Blocks())
	}
}

func TestReservedMustMatchAllocatable(t *testing.T) {
	cfg := static
	cfg.NodeReserved = 200 << 20
	_, err := newManager(t, memfs.New(), cfg)
	if err == nil || !strings.Contains(err.Error(), `the total amount "104857600" of type "memory" is not equal to the value "209715200" determined by Node Allocatable feature`) {
		t.Errorf("error %v", err)
	}
}
