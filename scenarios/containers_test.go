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

// TestImageFixSkipsOldBackOff: a crash-looping container deep in its
// back-off gets a new image; the new image starts after a fresh back-off's
// first step (10 s after the last exit), not after the old one (160 s).
func TestImageFixSkipsOldBackOff(t *testing.T) {
	h := start(t, 42)
	pod := mustCreate(t, h, NewPod("crasher", h.NodeName, Exits("app", 2*time.Second, 1)))
	// Five crashes: the back-off after the fifth is 160 s.
	runUntil(t, h, "the fifth crash", 10*time.Minute, func() bool {
		for _, ct := range TrueContainers(h) {
			if ct.PodUID == pod.UID && ct.Attempt == 4 && ct.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				return true
			}
		}
		return false
	})
	if err := h.K.RunFor(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := h.API.User().UpdatePodSpec("default", "crasher", func(s *corev1.PodSpec) { s.Containers[0].Image = "nginx:latest" }); err != nil {
		t.Fatal(err)
	}
	edited := h.K.Now()
	runUntil(t, h, "the new image running", 3*time.Minute, func() bool {
		for _, ct := range TrueContainers(h) {
			if ct.PodUID == pod.UID && ct.Attempt == 5 {
				return true
			}
		}
		return false
	})
	if waited := h.K.Now().Sub(edited); waited > 15*time.Second {
		t.Errorf("the fixed image started %v after the edit, want ≤ 15 s (a fresh back-off)", waited)
	}
}
