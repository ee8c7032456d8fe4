package agent

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/activepods"
	"github.com/lockstep-dev/lockstep/node/podadmit"
	"github.com/lockstep-dev/lockstep/node/podworkers"
)

// shutdownPods is the agent's side of graceful node shutdown: the pods it
// stops are those the eviction manager may evict, stopped the same way.
type shutdownPods struct{ a *Agent }

// MayRunContainers are the pods whose containers may still run
// (activepods.MayRunContainers).
func (p shutdownPods) MayRunContainers() []*corev1.Pod {
	return activepods.MayRunContainers(p.a.podSets())
}

// Kill stops the pod with grace and fails it as the shutdown says (see
// SyncTerminatingPod).
func (p shutdownPods) Kill(pod *corev1.Pod, grace int64, reason, message string, cond corev1.PodCondition) {
	cond.ObservedGeneration = pod.Generation
	p.a.stopAndFail(pod, &grace, podadmit.StopNote{Reason: reason, Message: message, Condition: cond})
}

// PodCleanedUp reports whether the pod's kill has completed: its worker
// has stopped every container (the runtime cache may not show a container
// started since its last relist).
func (p shutdownPods) PodCleanedUp(uid types.UID) bool {
	st, ok := p.a.workers.State(uid)
	return !ok || st == podworkers.Terminated
}

// nodeSyncer writes the node status now, once the node status manager
// exists (it has an apiserver).
type nodeSyncer struct{ a *Agent }

func (n nodeSyncer) SyncNow() {
	if n.a.node.status != nil {
		n.a.node.status.SyncNow()
	}
}

// ShuttingDown reports whether the node is shutting down (graceful node
// shutdown under way).
func (a *Agent) ShuttingDown() bool { return a.node.shutdown.ShuttingDown() }
