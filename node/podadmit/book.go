// Package podadmit keeps the agent's admission state and decides on the
// pods new to it. Book is the state, safe for concurrent use: the pods
// admitted (with what they use of the node), the pods refused and why,
// the pods the agent stopped (evicted, preempted, shut down) with how
// their status says so, the pods whose resize waits for room, and what was
// last reported about each pod's unsupported fields. Decide is the
// admission chain, a function of its steps; NodeView keeps the Node that
// admission decides against.
package podadmit

import (
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// StopNote is how the status of a pod the agent stopped (evicted,
// preempted, shut down) says so.
type StopNote struct {
	Reason, Message string
	Condition       corev1.PodCondition
}

// Book is the agent's admission state.
type Book struct {
	mu       sync.Mutex
	admitted *admission.Admitted
	refused  map[types.UID]admission.Decision
	stopped  map[types.UID]StopNote
	// pendingResizes are the pods whose resize is deferred.
	pendingResizes map[types.UID]bool
	// unsupported is what was last reported about each pod's unsupported
	// fields (a key of the ignored fields).
	unsupported map[types.UID]string
}

// NewBook returns an empty book.
func NewBook() *Book {
	return &Book{
		admitted: admission.NewAdmitted(), refused: map[types.UID]admission.Decision{},
		stopped: map[types.UID]StopNote{}, pendingResizes: map[types.UID]bool{}, unsupported: map[types.UID]string{},
	}
}

// NeedsDecision reports whether pod is new to admission: not terminal or
// being deleted (it will not run, and counts for nothing), and neither
// admitted nor refused before.
func (b *Book) NeedsDecision(pod *corev1.Pod) bool {
	if podutil.IsTerminal(pod.Status.Phase) || pod.DeletionTimestamp != nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	_, admitted := b.admitted.Pod(pod.UID)
	_, refused := b.refused[pod.UID]
	return !admitted && !refused
}

// Record keeps the decision on pod: admitted, it counts against the node
// (as allocated); refused, the refusal is kept for its sync.
func (b *Book) Record(pod *corev1.Pod, d admission.Decision) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d.Admitted() {
		b.admitted.Set(pod)
	} else {
		b.refused[pod.UID] = d
	}
}

// Fits decides on pod against node beside what the admitted pods use
// (admission.AdmitBeside).
func (b *Book) Fits(pod *corev1.Pod, node admission.Node) admission.Decision {
	b.mu.Lock()
	defer b.mu.Unlock()
	return admission.AdmitBeside(pod, node, b.admitted.Usage())
}

// IsAdmitted reports whether pod uid counts against the node.
func (b *Book) IsAdmitted(uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.admitted.Pod(uid)
	return ok
}

// Admitted are the pods that count against the node, in no particular
// order (activepods.Admitted sorts them).
func (b *Book) Admitted() []*corev1.Pod {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.admitted.Pods()
}

// Resized counts pod, whose resize was accepted, at its new allocation,
// if it is admitted.
func (b *Book) Resized(pod *corev1.Pod) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.admitted.Pod(pod.UID); ok {
		b.admitted.Set(pod)
	}
}

// Refusal is why admission refused pod uid, if it did.
func (b *Book) Refusal(uid types.UID) (admission.Decision, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.refused[uid]
	return d, ok
}

// Rejection is why pod must not run at all: admission refused it (its
// recorded refusal), or it sets a sysctl sysctls does not allow; "" when
// it may run.
func (b *Book) Rejection(pod *corev1.Pod, sysctls *admission.SysctlAllowlist) (reason, message string) {
	if d, ok := b.Refusal(pod.UID); ok {
		return d.Reason, d.Message
	}
	if msg := sysctls.Admit(pod); msg != "" {
		return admission.ReasonSysctlForbidden, msg
	}
	return "", ""
}

// Stop records that the agent stops pod uid (evicts, preempts, shuts it
// down) as note says: it no longer counts against the node.
func (b *Book) Stop(uid types.UID, note StopNote) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped[uid] = note
	b.admitted.Remove(uid)
}

// Stopped is how the agent stopped pod uid, if it did.
func (b *Book) Stopped(uid types.UID) (StopNote, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ok := b.stopped[uid]
	return n, ok
}

// Release drops pod uid, which is terminating, from the admitted pods and
// its deferred resize; it reports whether the pod counted (its resources
// are free again).
func (b *Book) Release(uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pendingResizes, uid)
	return b.admitted.Remove(uid)
}

// Forget drops what is kept of a pod removed from the agent (its refusal
// and how it was stopped).
func (b *Book) Forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.refused, uid)
	delete(b.stopped, uid)
}

// SetPendingResize records whether pod uid has a deferred resize.
func (b *Book) SetPendingResize(uid types.UID, pending bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if pending {
		b.pendingResizes[uid] = true
	} else {
		delete(b.pendingResizes, uid)
	}
}

// PendingResizes are the pods with a deferred resize, but except, sorted.
func (b *Book) PendingResizes(except types.UID) []types.UID {
	b.mu.Lock()
	uids := slices.Sorted(maps.Keys(b.pendingResizes))
	b.mu.Unlock()
	return slices.DeleteFunc(uids, func(uid types.UID) bool { return uid == except })
}

// UnsupportedChanged records key (what is unsupported in pod uid) and
// reports whether it differs from what was last recorded for the pod
// (then it is to be reported); a new pod with nothing unsupported has
// nothing to report.
func (b *Book) UnsupportedChanged(uid types.UID, key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	last := b.unsupported[uid] // "" for a pod not seen: nothing reported
	b.unsupported[uid] = key
	return last != key
}

// ForgetUnsupported drops what was recorded about a finished pod's
// unsupported fields.
func (b *Book) ForgetUnsupported(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.unsupported, uid)
}
