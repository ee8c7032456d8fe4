package podutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const digest = "sha256:2d93f6c5a2fa6ef1b1f47c7a2b7c8f0d0b6f6f2b1b8e8d5c4f3a2b1c0d9e8f7a"

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"registry.local:5000/team/app", corev1.PullAlways},
		{"registry.local:5000/team/app:v2", corev1.PullIfNotPresent},
		{"registry.local:5000/team/app:latest", corev1.PullAlways},
		{"app@" + digest, corev1.PullIfNotPresent},
		{"registry.local:5000/app@" + digest, corev1.PullIfNotPresent},
		{"app:latest@" + digest, corev1.PullAlways},
		{"app:v1@" + digest, corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		if got := DefaultPullPolicy(tt.image); got != tt.want {
			t.Errorf("DefaultPullPolicy(%q) = %s, want %s", tt.image, got, tt.want)
		}
	}
}

func TestPullPolicyKeepsAnExplicitPolicy(t *testing.T) {
	tests := []struct {
		c    corev1.Container
		want corev1.PullPolicy
	}{
		{corev1.Container{Image: "nginx:latest", ImagePullPolicy: corev1.PullNever}, corev1.PullNever},
		{corev1.Container{Image: "nginx:1", ImagePullPolicy: corev1.PullAlways}, corev1.PullAlways},
		{corev1.Container{Image: "nginx:latest@" + digest}, corev1.PullAlways},
		{corev1.Container{Image: "nginx:1"}, corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		if got := PullPolicy(&tt.c); got != tt.want {
			t.Errorf("PullPolicy(image %q, policy %q) = %s, want %s", tt.c.Image, tt.c.ImagePullPolicy, got, tt.want)
		}
	}
}
