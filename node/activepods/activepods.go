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
package activepods

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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
