package podspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestContainerHashIsUpstreams(t *testing.T) {
	// Golden values computed with the upstream kubelet's own function
	// (k8s.io/kubernetes v1.37.2 pkg/kubelet/container HashContainer,
	// printed with strconv.FormatUint(h, 16) as its labels code does). A
	// change here means a node cannot switch between the upstream kubelet
	// and lockstep without restarting every container.
	tests := []struct {
		name, image, want string
	}{
		{"app", "busybox:1", "d58a7d96"},
		{"", "", "edd67cc4"},
		{"app", "busybox:latest", "a18570d5"},
		{"nginx", "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "4be14991"},
		{"weird \"name\"", "registry.example.com:5000/a/b:<tag>&", "c3b0651a"},
		{"kube-apiserver", "registry.k8s.io/kube-apiserver:v1.37.2", "bd8bd84c"},
		{"üñí", "x\u2028y", "489c500e"},
	}
	for _, tt := range tests {
		c := corev1.Container{Name: tt.name, Image: tt.image}
		if got := ContainerHash(&c); got != tt.want {
			t.Errorf("ContainerHash(%q, %q) = %s, want %s", tt.name, tt.image, got, tt.want)
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
