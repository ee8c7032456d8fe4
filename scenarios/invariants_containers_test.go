package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// TestContainerInvariantsCatchViolations drives the runtime by hand (no
// agent) into the states no-stuck-created and previous-kept forbid, and
// checks the Checker names them.
func TestContainerInvariantsCatchViolations(t *testing.T) {
	h := harness.New(harness.Config{Seed: 47})
	t.Cleanup(h.Close)
	c := NewChecker(h)
	ctx := context.Background()
	pod := NewPod("web", h.NodeName)
	pod.UID = "uid-web"
	ids := upstreamKubeletRuns(t, h, pod, map[string]string{"app": "a18570d5"})
	sb := ""
	for _, s := range Sandboxes(h, pod.UID) {
		sb = s.Id
	}
	// Attempt 0 ran and stopped; attempt 1 runs.
	if err := h.Runtime.StopContainer(ctx, ids["app"], 0); err != nil {
		t.Fatal(err)
	}
	second := containerConfig(pod, "app", 1)
	id1, err := h.Runtime.CreateContainer(ctx, sb, second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Runtime.StartContainer(ctx, id1); err != nil {
		t.Fatal(err)
	}
	c.Check()
	if v := c.Violations(); len(v) != 0 {
		t.Fatalf("violations before anything is wrong: %v", v)
	}
	// previous-kept: attempt 0 goes while attempt 1 runs.
	if err := h.Runtime.RemoveContainer(ctx, ids["app"]); err != nil {
		t.Fatal(err)
	}
	c.Check()
	// no-stuck-created: a sidecar created and never started.
	if _, err := h.Runtime.CreateContainer(ctx, sb, containerConfig(pod, "side", 0), nil); err != nil {
		t.Fatal(err)
	}
	if err := RunChecked(h, c, MaxCreated+2*time.Second, time.Second); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range c.Violations() {
		got = append(got, v.Invariant)
	}
	if len(got) != 2 || got[0] != "previous-kept" || got[1] != "no-stuck-created" {
		t.Errorf("violations = %v, want previous-kept then no-stuck-created once each", c.Violations())
	}
}

// containerConfig is a minimal upstream-labelled container config.
func containerConfig(pod *corev1.Pod, name string, attempt uint32) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		Image:    &runtimeapi.ImageSpec{Image: "busybox:latest"},
		Labels: map[string]string{
			"io.kubernetes.pod.name": pod.Name, "io.kubernetes.pod.namespace": pod.Namespace,
			"io.kubernetes.pod.uid": string(pod.UID), "io.kubernetes.container.name": name,
		},
		LogPath: fmt.Sprintf("%s/%d.log", name, attempt),
	}
}

// TestPendingAgain: Running → Pending is legal only for the status
// upstream's getPhase calls Pending after a run: no regular container
// running and one waiting with no terminated last state.
func TestPendingAgain(t *testing.T) {
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	ended := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	pod := func(cs ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: cs}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"waiting, never ended", pod(corev1.ContainerStatus{Name: "a", State: waiting}), true},
		{"waiting after an exit (back-off)", pod(corev1.ContainerStatus{Name: "a", State: waiting, LastTerminationState: ended}), false},
		{"one waiting, one running", pod(corev1.ContainerStatus{Name: "a", State: waiting}, corev1.ContainerStatus{Name: "b", State: running}), false},
		{"terminated", pod(corev1.ContainerStatus{Name: "a", State: ended}), false},
	} {
		if got := pendingAgain(tc.pod); got != tc.want {
			t.Errorf("%s: pendingAgain = %v, want %v", tc.name, got, tc.want)
		}
	}
}
