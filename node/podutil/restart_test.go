package podutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestShouldRestart(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	plain := corev1.Container{Name: "c"}
	sidecar := corev1.Container{Name: "s", RestartPolicy: &always}
	tests := []struct {
		policy corev1.RestartPolicy
		c      corev1.Container
		init   bool
		exit   int32
		want   bool
	}{
		{corev1.RestartPolicyAlways, plain, false, 0, true},
		{corev1.RestartPolicyAlways, plain, false, 1, true},
		{"", plain, false, 0, true},
		{corev1.RestartPolicyOnFailure, plain, false, 0, false},
		{corev1.RestartPolicyOnFailure, plain, false, 137, true},
		{corev1.RestartPolicyNever, plain, false, 1, false},
		{corev1.RestartPolicyAlways, plain, true, 0, false},
		{corev1.RestartPolicyAlways, plain, true, 1, true},
		{corev1.RestartPolicyOnFailure, plain, true, 1, true},
		{corev1.RestartPolicyNever, plain, true, 1, false},
		{corev1.RestartPolicyNever, sidecar, true, 0, true},
		{corev1.RestartPolicyOnFailure, sidecar, true, 0, true},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tt.policy}}
		if got := ShouldRestart(pod, &tt.c, tt.init, tt.exit); got != tt.want {
			t.Errorf("policy %q, container %q (init %v, sidecar %v), exit %d: ShouldRestart = %v, want %v",
				tt.policy, tt.c.Name, tt.init, IsSidecar(&tt.c), tt.exit, got, tt.want)
		}
	}
}
