package scenarios

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// sandboxState is what sandbox-reported keeps: the last
// PodReadyToStartContainers status each pod's status was written with,
// the writes that turned it True not judged yet, and the earliest
// creation of a sandbox of each pod the checker has seen in the runtime.
type sandboxState struct {
	ready   map[types.UID]bool
	pending []sandboxClaim
	first   map[types.UID]time.Time
}

// sandboxClaim is a status write that said a pod's sandbox is ready.
type sandboxClaim struct {
	uid  types.UID
	name string
	at   time.Time
}

func newSandboxState() sandboxState {
	return sandboxState{ready: map[types.UID]bool{}, first: map[types.UID]time.Time{}}
}

// onWriteSandbox notes the agent's status writes that turn a pod's
// PodReadyToStartContainers True (sandbox-reported), to be judged at the
// next check against the runtime (a write reads nothing of the runtime:
// the simulation must see the checker's reads at the same instants).
func (c *Checker) onWriteSandbox(r apiserver.Record) {
	p := r.Pod
	if r.Actor != apiserver.ActorAgent || r.Verb != apiserver.VerbPatchStatus || p.Annotations[corev1.MirrorPodAnnotationKey] != "" {
		return
	}
	ready := false
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReadyToStartContainers {
			ready = cond.Status == corev1.ConditionTrue
		}
	}
	was := c.sandbox.ready[p.UID]
	c.sandbox.ready[p.UID] = ready
	if ready && !was {
		c.sandbox.pending = append(c.sandbox.pending, sandboxClaim{uid: p.UID, name: p.Namespace + "/" + p.Name, at: r.At})
	}
}

// checkSandboxReported checks sandbox-reported: a pod's status says
// PodReadyToStartContainers True only once a sandbox of the pod was
// created in the runtime — the kubelet sets it when RunPodSandbox and the
// network are done (OnPodSandboxReady) and, at later syncs, from a ready
// sandbox in its view, never for a sandbox that failed to run. The model
// is the runtime's own record: the creation times of the sandboxes it
// holds, by the pod UID of their metadata (the earliest seen kept, for
// sandboxes removed since). A claim is judged at the first check after
// its write (a sandbox created and removed between two checks, 100 ms of
// virtual time, would not be seen: none lives that short).
func (c *Checker) checkSandboxReported() {
	if len(c.sandbox.pending) == 0 {
		return
	}
	c.evaluate("sandbox")
	for _, sb := range c.truth().sandboxes {
		uid := types.UID(sb.GetMetadata().GetUid())
		created := time.Unix(0, sb.GetCreatedAt())
		if first, ok := c.sandbox.first[uid]; !ok || created.Before(first) {
			c.sandbox.first[uid] = created
		}
	}
	for _, claim := range c.sandbox.pending {
		if first, ok := c.sandbox.first[claim.uid]; !ok || first.After(claim.at) {
			c.fail("sandbox-reported", "pod %s written PodReadyToStartContainers True at %v with no sandbox of it created by then",
				claim.name, claim.at.Format(time.RFC3339Nano))
		}
	}
	c.sandbox.pending = c.sandbox.pending[:0]
}
