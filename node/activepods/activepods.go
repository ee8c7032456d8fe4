// Package activepods owns what "active pods" means to the agent's parts.
// The kubelet uses one word for four different sets; here each has its
// own name, and each is a pure function of the agent's pod state (the
// Sources), so that a reader sees which set a consumer means:
//
//   - Admitted: the pods admission counts against the node (the stats
//     sampler measures their volumes and logs).
//   - Evictable: the admitted pods still syncing and not terminal (what
//     the eviction manager ranks and evicts).
//   - MayRunContainers: the pods whose containers may still run, syncing
//     or terminating (what graceful node shutdown stops).
//   - HoldingResources: the desired pods not refused whose worker has not
//     finished, as allocated (what the QoS cgroups, the CPU, memory and
//     device managers keep resources for).
//
// Two predicates say what housekeeping may clean up: MayRun (a pod's
// cgroup, devices and allocation stay while it may run) and Known (its
// volume and user namespace directories stay while any part knows it).
package activepods

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/podworkers"
)

// Desired is the one store of the pods the sources want (podsource.Merger).
type Desired interface {
	Pod(uid types.UID) (*corev1.Pod, bool)
	Pods() []*corev1.Pod
}

// Workers is what the pod workers say of each pod (podworkers.PodWorkers).
type Workers interface {
	UIDs() []types.UID
	State(uid types.UID) (podworkers.State, bool)
	IsFinished(uid types.UID) bool
}

// Sources are the facts the sets are computed from.
type Sources struct {
	Desired Desired
	Workers Workers
	// Admitted are the pods admission admitted that still count against
	// the node, in any order.
	Admitted func() []*corev1.Pod
	// Refused reports whether admission (or the sysctl allowlist) refused
	// the pod.
	Refused func(*corev1.Pod) bool
	// Allocated is the pod carrying the resources it was allocated.
	Allocated func(*corev1.Pod) *corev1.Pod
	// Phase is the phase the status manager last computed for the pod.
	Phase func(uid types.UID) (corev1.PodPhase, bool)
	// Runtime is the runtime's view of the pod (the PLEG cache).
	Runtime func(uid types.UID) (*podstate.PodStatus, bool)
}

// Admitted are the pods admission counts against the node, oldest first.
func Admitted(s Sources) []*corev1.Pod {
	out := s.Admitted()
	podutil.SortByCreation(out)
	return out
}

// Evictable are the admitted pods the eviction manager may evict: still
// desired and not being deleted (the newest object is returned), whose
// worker is syncing and whose last status is not terminal, oldest first.
func Evictable(s Sources) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range Admitted(s) {
		cur, ok := s.Desired.Pod(pod.UID)
		if !ok || cur.DeletionTimestamp != nil {
			continue
		}
		if st, ok := s.Workers.State(pod.UID); !ok || st != podworkers.Syncing {
			continue
		}
		if phase, ok := s.Phase(pod.UID); ok && podutil.IsTerminal(phase) {
			continue
		}
		out = append(out, cur)
	}
	return out
}

// MayRunContainers are the pods whose containers may still run: a worker
// syncing or terminating them (being deleted or evicted, maybe with a
// longer grace period than a shutdown allows) and still desired, mirror
// pods left out, oldest first.
func MayRunContainers(s Sources) []*corev1.Pod {
	var out []*corev1.Pod
	for _, uid := range s.Workers.UIDs() {
		if st, ok := s.Workers.State(uid); !ok || st == podworkers.Terminated {
			continue
		}
		if pod, ok := s.Desired.Pod(uid); ok && !podutil.IsMirrorPod(pod) {
			out = append(out, pod)
		}
	}
	podutil.SortByCreation(out)
	return out
}

// HoldingResources are the pods whose requests count in the QoS cgroups
// and which may hold CPUs, memory and devices: desired, not mirror pods,
// not refused, not terminal, whose worker has not finished, carrying the
// resources they were allocated; in the desired store's order.
func HoldingResources(s Sources) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range s.Desired.Pods() {
		if podutil.IsMirrorPod(pod) || s.Workers.IsFinished(pod.UID) || podutil.IsTerminal(pod.Status.Phase) || s.Refused(pod) {
			continue
		}
		out = append(out, s.Allocated(pod))
	}
	return out
}

// MayRun reports whether pod uid may still have processes or start some:
// its worker has not both terminated and finished, or it has no worker
// yet and a source wants it, or the runtime still runs something of it (a
// ready sandbox or a running container).
func MayRun(s Sources, uid types.UID) bool {
	if state, ok := s.Workers.State(uid); ok {
		if state != podworkers.Terminated || !s.Workers.IsFinished(uid) {
			return true
		}
	} else if _, desired := s.Desired.Pod(uid); desired {
		return true
	}
	st, ok := s.Runtime(uid)
	return ok && runsSomething(st)
}

// runsSomething reports whether the runtime's view of a pod shows a ready
// sandbox or a running container.
func runsSomething(st *podstate.PodStatus) bool {
	if len(st.Running()) > 0 {
		return true
	}
	for _, sb := range st.Sandboxes {
		if sb.State == podstate.SandboxReady {
			return true
		}
	}
	return false
}

// Known reports whether some part of the agent still has pod uid: a
// source wants it, a worker owns it, or the runtime holds something of it.
func Known(s Sources, uid types.UID) bool {
	if _, ok := s.Desired.Pod(uid); ok {
		return true
	}
	if _, ok := s.Workers.State(uid); ok {
		return true
	}
	st, ok := s.Runtime(uid)
	// The runtime's view keeps an empty entry for a pod whose containers
	// and sandboxes were removed: that holds nothing of it.
	return ok && (len(st.Containers) > 0 || len(st.Sandboxes) > 0)
}
