package scenarios

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPromptShown(t *testing.T) {
	starts := map[string]int64{"old": 1, "mine": 2, "new": 3}
	startedAt := func(id string) (int64, bool) { v, ok := starts[id]; return v, ok }
	running := func(id string, ready bool) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "app", ContainerID: "containerd://" + id, Ready: ready,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	}
	terminated := func(id string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "app", ContainerID: "containerd://" + id,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ContainerID: "containerd://" + id}}}
	}
	waitingAfter := func(last string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "app", ContainerID: "containerd://" + last,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ContainerID: "containerd://" + last}}}
	}
	start := promptEvent{container: "app", id: "mine", started: 2}
	exit := promptEvent{container: "app", id: "mine", exit: true, started: 2}
	for _, tc := range []struct {
		name  string
		ev    promptEvent
		cs    []corev1.ContainerStatus
		ready bool
		want  bool
	}{
		{"no status yet", start, nil, false, false},
		{"start shown running", start, []corev1.ContainerStatus{running("mine", false)}, false, true},
		{"start shown but not ready when it must be", start, []corev1.ContainerStatus{running("mine", false)}, true, false},
		{"start shown ready", start, []corev1.ContainerStatus{running("mine", true)}, true, true},
		{"start: still the previous instance", start, []corev1.ContainerStatus{running("old", true)}, false, false},
		{"start: a later instance shown", start, []corev1.ContainerStatus{running("new", true)}, false, true},
		{"exit: still running", exit, []corev1.ContainerStatus{running("mine", true)}, false, false},
		{"exit shown terminated", exit, []corev1.ContainerStatus{terminated("mine")}, false, true},
		{"exit shown as the last state (back-off)", exit, []corev1.ContainerStatus{waitingAfter("mine")}, false, true},
		{"exit: waiting after an older instance", exit, []corev1.ContainerStatus{waitingAfter("old")}, false, false},
		{"exit: a later instance shown, this one removed since", promptEvent{container: "app", id: "removed", exit: true, started: 2}, []corev1.ContainerStatus{waitingAfter("new")}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: tc.cs}}
			if got, shown := promptShown(tc.ev, pod, tc.ready, startedAt); got != tc.want {
				t.Errorf("promptShown = %v (%s), want %v", got, shown, tc.want)
			}
		})
	}
}
