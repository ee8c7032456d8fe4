package scenarios

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// TestSidecarInvariantsCatchViolations drives the runtime by hand (no
// agent): the app of a pod with a sidecar started before the sidecar
// breaks sidecar-order; an ephemeral container run twice breaks
// never-restart, while a sidecar run twice in a restartPolicy Never pod
// does not.
func TestSidecarInvariantsCatchViolations(t *testing.T) {
	h := harness.New(harness.Config{Seed: 48})
	t.Cleanup(h.Close)
	c := NewChecker(h)
	ctx := context.Background()
	pod := NewPod("web", h.NodeName, Restart(corev1.RestartPolicyNever), Sidecar("proxy"), func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox:latest"}}}
	})
	pod.Spec.NodeName = "elsewhere" // no agent runs it; the checker learns its spec
	created, err := h.API.User().CreatePod(pod)
	if err != nil {
		t.Fatal(err)
	}
	upstreamKubeletRuns(t, h, created, map[string]string{"app": "a18570d5"})
	sb := Sandboxes(h, created.UID)[0].Id
	start := func(name string, attempt uint32) {
		t.Helper()
		id, err := h.Runtime.CreateContainer(ctx, sb, containerConfig(created, name, attempt), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Runtime.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := h.Runtime.StopContainer(ctx, id, 10); err != nil {
			t.Fatal(err)
		}
	}
	c.Check()
	start("proxy", 0)
	start("proxy", 1)
	c.Check()
	start("debug", 0)
	start("debug", 1)
	c.Check()
	var got []string
	for _, v := range c.Violations() {
		got = append(got, v.Invariant)
	}
	if len(got) != 2 || got[0] != "sidecar-order" || got[1] != "never-restart" {
		t.Errorf("violations = %v, want sidecar-order then never-restart (the ephemeral container), once each", c.Violations())
	}
}
