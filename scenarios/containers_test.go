package scenarios

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestCrashBetweenCreateAndStart crashes the agent right after it created
// a container and before it started it (StartContainer hangs, the agent
// dies): the restarted agent must start the next attempt and remove the
// stale Created instance, not retry the reserved name forever.
func TestCrashBetweenCreateAndStart(t *testing.T) {
	h := start(t, 41)
	c := NewChecker(h)
	pod := NewPod("web", h.NodeName)
	hang := h.Runtime.Hang("StartContainer", "")
	pod = mustCreate(t, h, pod)
	runUntil(t, h, "StartContainer caught", time.Minute, hang.Caught)
	h.CrashAgent()
	hang.Release()
	if err := RunChecked(h, c, time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	h.StartAgent()
	runUntil(t, h, "web Running and Ready", 2*time.Minute, func() bool {
		c.Check()
		return PodIs(h, "default", "web", corev1.PodRunning, true)
	})
	if err := RunChecked(h, c, 30*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	reportViolations(t, c)
	var got []RuntimeContainer
	for _, ct := range PodContainers(h, pod.UID) {
		if ct.State == runtimeapi.ContainerState_CONTAINER_CREATED {
			t.Errorf("a Created instance is left: %+v", ct)
		}
		got = append(got, ct)
	}
	if len(got) != 1 || got[0].Attempt != 1 || got[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("runtime containers of web = %+v, want one running instance of attempt 1", got)
	}
}
