package status

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestActiveDeadline(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ten := int64(10)
	withDeadline := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: &ten}}
	cases := []struct {
		name     string
		pod      *corev1.Pod
		start    *time.Time
		now      time.Time
		wantLeft time.Duration
		wantOK   bool
	}{
		{"no deadline", &corev1.Pod{}, &start, start.Add(time.Hour), 0, false},
		{"not started", withDeadline, nil, start, 0, false},
		{"3 s in", withDeadline, &start, start.Add(3 * time.Second), 7 * time.Second, true},
		{"at the deadline", withDeadline, &start, start.Add(10 * time.Second), 0, true},
		{"past it", withDeadline, &start, start.Add(12 * time.Second), -2 * time.Second, true},
	}
	for _, tc := range cases {
		left, ok := ActiveDeadline(tc.pod, tc.start, tc.now)
		if left != tc.wantLeft || ok != tc.wantOK {
			t.Errorf("%s: ActiveDeadline = %v, %v; want %v, %v", tc.name, left, ok, tc.wantLeft, tc.wantOK)
		}
	}
}

func TestDeadlineExceededFailsThePod(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	running := corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: now.Add(-time.Minute)},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	got := DeadlineExceeded(pod, running, nil, now)
	if got.Phase != corev1.PodFailed || got.Reason != "DeadlineExceeded" ||
		got.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("phase %s reason %q message %q", got.Phase, got.Reason, got.Message)
	}
	conds := map[corev1.PodConditionType]string{}
	for _, c := range got.Conditions {
		conds[c.Type] = string(c.Status) + "/" + c.Reason
	}
	want := map[corev1.PodConditionType]string{
		corev1.PodReadyToStartContainers: "False/PodSandboxNotReady", corev1.PodInitialized: "True/", // no sandbox in the view
		corev1.PodReady: "False/PodFailed", corev1.ContainersReady: "False/PodFailed", corev1.PodScheduled: "True/",
	}
	if diff := cmp.Diff(want, conds); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}
