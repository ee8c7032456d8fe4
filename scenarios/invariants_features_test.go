package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestPodNeedingAnUndeclaredFeatureIsRefused: a pod whose container has a
// RestartAllContainers restart rule needs RestartAllContainersOnContainerExits,
// which lockstep does not declare; bound to the node (the scheduler would
// not place it), the agent's admission refuses it as the kubelet's
// declared-features admit handler: Failed, reason PodFeatureUnsupported,
// the missing feature named, and nothing of it created in the runtime.
func TestPodNeedingAnUndeclaredFeatureIsRefused(t *testing.T) {
	h := start(t, 53)
	c := NewChecker(h)
	pod := mustCreate(t, h, restartAllPod("restart-all", h.NodeName))
	if err := RunChecked(h, c, 10*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	p, ok := APIPod(h, "default", "restart-all")
	if !ok {
		t.Fatal("pod gone from the API")
	}
	type verdict struct {
		Phase           corev1.PodPhase
		Reason, Message string
	}
	want := verdict{corev1.PodFailed, "PodFeatureUnsupported", "Pod was rejected: Pod requires node features that are not available: RestartAllContainersOnContainerExits"}
	if diff := cmp.Diff(want, verdict{p.Status.Phase, p.Status.Reason, p.Status.Message}); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	for _, ct := range TrueContainers(h) {
		if ct.PodUID == pod.UID {
			t.Errorf("container %s of the refused pod was created", ct.Name)
		}
	}
	reportViolations(t, c)
}
