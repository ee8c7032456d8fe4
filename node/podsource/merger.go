package podsource

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Merger keeps the pods of every registered source by UID and turns each
// snapshot or watch event into Updates on its inbox. It is safe for use by
// several tasks; the Updates of one call are put on the inbox before the
// call returns, in the order REMOVE, ADD, UPDATE, DELETE, RECONCILE.
type Merger struct {
	log   *slog.Logger
	clock deps.Clock
	out   *deps.Inbox[Update]

	mu      sync.Mutex
	sources map[string]*sourcePods
	names   []string
}

// sourcePods is what one source has delivered so far.
type sourcePods struct {
	pods map[types.UID]*corev1.Pod
	// seen: the source has delivered a complete snapshot.
	seen bool
}

// NewMerger returns a Merger for the named sources that puts its Updates
// on out.
func NewMerger(d deps.Core, sources []string, out *deps.Inbox[Update]) *Merger {
	m := &Merger{log: d.Log, clock: d.Clock, out: out, sources: map[string]*sourcePods{}}
	for _, name := range sources {
		if _, dup := m.sources[name]; dup {
			continue
		}
		m.sources[name] = &sourcePods{pods: map[types.UID]*corev1.Pod{}}
		m.names = append(m.names, name)
	}
	return m
}

// Seen reports whether source has delivered its first complete snapshot.
func (m *Merger) Seen(source string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sources[source]
	return s != nil && s.seen
}

// AllSeen reports whether every registered source has delivered its first
// complete snapshot: until then the agent cannot tell an orphan from a pod
// it has not heard of yet.
func (m *Merger) AllSeen() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range m.names {
		if !m.sources[name].seen {
			return false
		}
	}
	return true
}

// MirrorPods returns the mirror pods the API source holds, by full name
// (namespace/name): the agent's view of its mirror pods, kept current by
// the API watch, so reconciling them costs no API read. It is empty when
// there is no API source.
func (m *Merger) MirrorPods() map[string]*corev1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]*corev1.Pod{}
	s := m.sources[SourceAPI]
	if s == nil {
		return out
	}
	for _, p := range s.pods {
		if podutil.IsMirrorPod(p) {
			out[p.Namespace+"/"+p.Name] = p.DeepCopy()
		}
	}
	return out
}

// APIPod returns the pod with uid as the API source last delivered it,
// status included (mirror pods too): what the API holds, as far as the
// watch has told.
func (m *Merger) APIPod(uid types.UID) (*corev1.Pod, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sources[SourceAPI]
	if s == nil || s.pods[uid] == nil {
		return nil, false
	}
	return s.pods[uid], true
}

// MirrorPod returns the mirror pod namespace/name as the API source last
// delivered it.
func (m *Merger) MirrorPod(namespace, name string) (*corev1.Pod, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sources[SourceAPI]
	if s == nil {
		return nil, false
	}
	for _, p := range s.pods {
		if p.Namespace == namespace && p.Name == name && podutil.IsMirrorPod(p) {
			return p, true
		}
	}
	return nil, false
}

// Pod returns the desired pod with uid, from whichever source has it: the
// one store of the pods the node should run. Mirror pods are not desired
// pods (the static pod each mirrors is), so they are never returned.
func (m *Merger) Pod(uid types.UID) (*corev1.Pod, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range m.names {
		if p := m.sources[name].pods[uid]; p != nil && !podutil.IsMirrorPod(p) {
			return p, true
		}
	}
	return nil, false
}

// Pods returns every desired pod of every source (mirror pods excluded),
// sorted by namespace, name and UID.
func (m *Merger) Pods() []*corev1.Pod {
	m.mu.Lock()
	var out []*corev1.Pod
	for _, name := range m.names {
		for _, p := range m.sources[name].pods {
			if !podutil.IsMirrorPod(p) {
				out = append(out, p)
			}
		}
	}
	m.mu.Unlock()
	podutil.SortPods(out)
	return out
}

// Has reports whether source currently has the pod with uid.
func (m *Merger) Has(source string, uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sources[source]
	return s != nil && s.pods[uid] != nil
}

// Set replaces source's pods with a complete snapshot and emits the
// difference: new UIDs are added, vanished ones removed, known ones
// updated, deleted or reconciled by what changed. pods is not modified.
func (m *Merger) Set(source string, pods []*corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.source(source)
	next := make(map[types.UID]*corev1.Pod, len(pods))
	groups := map[Op][]*corev1.Pod{}
	for _, p := range pods {
		if p == nil {
			continue
		}
		if p.UID == "" {
			m.log.Warn("pod without UID ignored", "source", source, "pod", p.Namespace+"/"+p.Name)
			continue
		}
		if _, dup := next[p.UID]; dup {
			m.log.Warn("pod listed twice; first kept", "source", source, "pod", p.Namespace+"/"+p.Name, "uid", p.UID)
			continue
		}
		own := m.stampSeen(s.pods[p.UID], ownCopy(source, p))
		next[own.UID] = own
		if op, ok := change(s.pods[own.UID], own); ok {
			groups[op] = append(groups[op], own)
		}
	}
	for uid, old := range s.pods {
		if _, ok := next[uid]; !ok {
			groups[OpRemove] = append(groups[OpRemove], old)
		}
	}
	s.pods = next
	s.seen = true
	for _, op := range []Op{OpRemove, OpAdd, OpUpdate, OpDelete, OpReconcile} {
		if len(groups[op]) > 0 {
			m.emit(op, source, groups[op])
		}
	}
}

// Apply records one watch event of source in constant time: an added or
// modified pod is added, updated, deleted or reconciled against what the
// source had; a deleted pod is removed.
func (m *Merger) Apply(source string, event deps.PodEventType, pod *corev1.Pod) {
	if pod == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.source(source)
	if pod.UID == "" {
		m.log.Warn("pod without UID ignored", "source", source, "pod", pod.Namespace+"/"+pod.Name)
		return
	}
	switch event {
	case deps.PodAdded, deps.PodModified:
		own := m.stampSeen(s.pods[pod.UID], ownCopy(source, pod))
		op, ok := change(s.pods[own.UID], own)
		s.pods[own.UID] = own
		if ok {
			m.emit(op, source, []*corev1.Pod{own})
		}
	case deps.PodDeleted:
		if _, ok := s.pods[pod.UID]; !ok {
			return
		}
		delete(s.pods, pod.UID)
		m.emit(OpRemove, source, []*corev1.Pod{ownCopy(source, pod)})
	default:
		m.log.Warn("unknown pod event ignored", "source", source, "event", string(event), "pod", pod.Namespace+"/"+pod.Name)
	}
}

// source returns the state of a registered source; an unknown name is a
// wiring bug.
func (m *Merger) source(name string) *sourcePods {
	s := m.sources[name]
	if s == nil {
		panic(fmt.Sprintf("podsource: source %q was not registered with the merger", name))
	}
	return s
}

// emit puts copies of pods, sorted by namespace and name, on the inbox.
// It runs under m.mu so that Updates keep the order of the calls.
func (m *Merger) emit(op Op, source string, pods []*corev1.Pod) {
	podutil.SortPods(pods)
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		out[i] = p.DeepCopy()
	}
	m.out.Put(Update{Op: op, Source: source, Pods: out})
}

// ownCopy returns the merger's copy of p, stamped with its source.
func ownCopy(source string, p *corev1.Pod) *corev1.Pod {
	own := p.DeepCopy()
	if own.Annotations == nil {
		own.Annotations = map[string]string{}
	}
	own.Annotations[AnnotationConfigSource] = source
	return own
}

// stampSeen gives own the time the agent first saw the pod
// (AnnotationConfigSeen), as the kubelet's pod config does for every pod it
// receives (recordFirstSeenTime): old's time when the source had it
// already, now for a new pod; a static pod's manifest source sets its own.
// Containers see it through the downward API's metadata.annotations.
func (m *Merger) stampSeen(old, own *corev1.Pod) *corev1.Pod {
	if old == nil {
		old = &corev1.Pod{}
	}
	if seen, ok := old.Annotations[AnnotationConfigSeen]; ok {
		own.Annotations[AnnotationConfigSeen] = seen
	} else if _, ok := own.Annotations[AnnotationConfigSeen]; !ok {
		own.Annotations[AnnotationConfigSeen] = m.clock.Now().Format(time.RFC3339Nano)
	}
	return own
}

// change classifies how a pod moved from old (nil: unknown) to cur.
func change(old, cur *corev1.Pod) (Op, bool) {
	switch {
	case old == nil:
		return OpAdd, true
	case !sameDesire(old, cur):
		if deletionRequested(old, cur) {
			return OpDelete, true
		}
		return OpUpdate, true
	case !equality.Semantic.DeepEqual(old.Status, cur.Status):
		return OpReconcile, true
	}
	return "", false
}

// deletionRequested reports whether cur asks for a deletion old did not:
// a deletion newly requested, or a pending one whose grace period was
// shortened (a second delete with a shorter grace, or a forced one).
func deletionRequested(old, cur *corev1.Pod) bool {
	switch {
	case cur.DeletionTimestamp == nil:
		return false
	case old.DeletionTimestamp == nil:
		return true
	}
	was, now := old.DeletionGracePeriodSeconds, cur.DeletionGracePeriodSeconds
	return now != nil && (was == nil || *now < *was)
}

// sameDesire reports whether two versions of a pod ask the agent for the
// same thing: same spec, labels, annotations (but the first-seen time) and
// deletion request. Resource versions, managed fields and the like do not
// count.
func sameDesire(a, b *corev1.Pod) bool {
	return equality.Semantic.DeepEqual(a.Spec, b.Spec) &&
		equality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) &&
		equality.Semantic.DeepEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds) &&
		annotationsEqual(a.Annotations, b.Annotations)
}

// annotationsEqual compares annotations, ignoring the first-seen time.
func annotationsEqual(a, b map[string]string) bool {
	n := 0
	for k, va := range a {
		if k == AnnotationConfigSeen {
			continue
		}
		if vb, ok := b[k]; !ok || vb != va {
			return false
		}
		n++
	}
	for k := range b {
		if k != AnnotationConfigSeen {
			n--
		}
	}
	return n == 0
}
