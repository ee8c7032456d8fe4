package scenarios

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// TestBlockedContainerNeverReportedStarted mirrors the conformance spec
// "Pod Container Status should never report container start when an init
// container fails": pods whose init container exits 1 under restartPolicy
// Never are deleted after a varying delay (while the init container is
// being created, running, or already failed). In every status the agent
// writes, the regular container, blocked behind the failed init container,
// is waiting, not started, with no past termination.
func TestBlockedContainerNeverReportedStarted(t *testing.T) {
	h := start(t, 97)
	var bad []string
	h.API.OnWrite(func(r apiserver.Record) {
		if r.Kind != apiserver.KindPod || r.Actor != apiserver.ActorAgent || r.Pod == nil {
			return
		}
		for _, cs := range r.Pod.Status.ContainerStatuses {
			if cs.State.Waiting == nil || (cs.Started != nil && *cs.Started) || cs.LastTerminationState.Terminated != nil {
				bad = append(bad, fmt.Sprintf("%s rv %d: blocked container %q: state %+v started %v last %+v",
					r.Name, r.RV, cs.Name, cs.State, ptrStr(cs.Started), cs.LastTerminationState))
			}
		}
	})
	const pods = 15
	for i := range pods {
		name := fmt.Sprintf("initfail-%d", i)
		mustCreate(t, h, NewPod(name, h.NodeName, Restart(corev1.RestartPolicyNever), Init("fail", 500*time.Millisecond, 1)))
		if err := h.K.RunFor(time.Duration(i) * 150 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := h.API.User().DeletePodGracefully("default", name, nil); err != nil {
			t.Fatal(err)
		}
	}
	runUntil(t, h, "every pod deleted", 5*time.Minute, func() bool { return len(h.API.User().ListAllPods()) == 0 })
	for _, b := range bad {
		t.Error(b)
	}
}

func ptrStr(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}
