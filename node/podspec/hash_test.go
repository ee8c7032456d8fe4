package podspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestContainerHashIsStable(t *testing.T) {
	// Golden values: a change here means every running container would be
	// restarted by an agent upgrade. Change them only on purpose.
	tests := []struct {
		c    corev1.Container
		want string
	}{
		{corev1.Container{Name: "app", Image: "busybox:1"}, "b758e5b0b2243ddf"},
		{corev1.Container{}, "6c0dc1f9bab41595"},
	}
	for _, tt := range tests {
		if got := ContainerHash(&tt.c); got != tt.want {
			t.Errorf("ContainerHash(%s, %s) = %s, want %s", tt.c.Name, tt.c.Image, got, tt.want)
		}
	}
}

func TestContainerHashSensitivity(t *testing.T) {
	base := corev1.Container{
		Name:      "app",
		Image:     "busybox:1",
		Command:   []string{"sh"},
		Resources: corev1.ResourceRequirements{Requests: rl("cpu", "100m"), Limits: rl("memory", "64Mi")},
	}
	h := ContainerHash(&base)
	if again := ContainerHash(base.DeepCopy()); again != h {
		t.Fatalf("hash of a copy = %s, want %s", again, h)
	}
	tests := []struct {
		name    string
		mod     func(*corev1.Container)
		changes bool
	}{
		{"image", func(c *corev1.Container) { c.Image = "busybox:2" }, true},
		{"name", func(c *corev1.Container) { c.Name = "app2" }, true},
		{"name and image swap boundary", func(c *corev1.Container) { c.Name, c.Image = "app:", "busybox" }, true},
		{"cpu request", func(c *corev1.Container) { c.Resources.Requests = rl("cpu", "2") }, false},
		{"memory limit", func(c *corev1.Container) { c.Resources.Limits = rl("memory", "1Gi") }, false},
		{"resize policy", func(c *corev1.Container) {
			c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
		}, false},
		{"probe", func(c *corev1.Container) {
			c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}, false},
		{"pull policy", func(c *corev1.Container) { c.ImagePullPolicy = corev1.PullAlways }, false},
	}
	for _, tt := range tests {
		c := base.DeepCopy()
		tt.mod(c)
		if changed := ContainerHash(c) != h; changed != tt.changes {
			t.Errorf("%s: hash changed = %v, want %v", tt.name, changed, tt.changes)
		}
	}
}
