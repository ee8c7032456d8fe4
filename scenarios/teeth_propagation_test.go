//go:build regress_teeth_propagation

package scenarios

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestRegressionTeethPropagation: with the agent leaving its root
// directory private (regress_teeth_propagation), propagation-shared —
// which judges every container's Bidirectional and HostToContainer mounts
// against the mounts the simulated host made shared, not against the
// agent's view — catches the first such container created.
func TestRegressionTeethPropagation(t *testing.T) {
	testRegression(t, "volumes", "propagation-shared", 200)
}

// TestRegressionTeethPropagationPrivileged: the same build passes an
// unprivileged container's Bidirectional mount to the runtime;
// propagation-privileged, which reads the privilege from the pod as the
// user wrote it, catches the container. No random plan makes such a pod
// (API validation refuses it; the simulated apiserver does not), so the
// pod is made here.
func TestRegressionTeethPropagationPrivileged(t *testing.T) {
	h := start(t, 35)
	c := NewChecker(h)
	mustCreate(t, h, NewPod("rogue", h.NodeName, WithVolume(emptyDir("shared")),
		MountsPropagated("app", "shared", "/mnt", corev1.MountPropagationBidirectional)))
	if err := RunChecked(h, c, 10*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, v := range c.Violations() {
		if v.Invariant == "propagation-privileged" {
			t.Logf("caught: %s", v)
			return
		}
	}
	t.Fatalf("propagation-privileged did not fire; violations: %v", c.Violations())
}
