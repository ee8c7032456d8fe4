package podspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

func TestContainerConfig(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.TerminationGracePeriodSeconds = ptr(int64(45))
		p.Spec.Containers[0] = corev1.Container{
			Name:       "app",
			Image:      "registry.example/app:v2",
			Command:    []string{"/bin/$(PROG)", "--name=$(POD_NAME)"},
			Args:       []string{"--ip", "$(POD_IP)", "$$(POD_IP)", "$(MISSING)"},
			WorkingDir: "/srv",
			Env: []corev1.EnvVar{
				{Name: "PROG", Value: "server"},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				{Name: "URL", Value: "http://$(POD_IP):8080/$(PROG)"},
			},
			Resources: corev1.ResourceRequirements{
				Requests: rl("cpu", "500m", "memory", "256Mi"),
				Limits:   rl("cpu", "2", "memory", "512Mi"),
			},
			TerminationMessagePath: "/dev/termination-log",
			Stdin:                  true,
			StdinOnce:              true,
			TTY:                    true,
		}
	})
	c := &pod.Spec.Containers[0]
	got, err := ContainerConfigWith(pod, c, ContainerOptions{RestartCount: 3, PodIPs: []string{"10.1.0.7"}}, testNode())
	if err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.ContainerConfig{
		Metadata:   &runtimeapi.ContainerMetadata{Name: "app", Attempt: 3},
		Image:      &runtimeapi.ImageSpec{Image: "registry.example/app:v2"},
		Command:    []string{"/bin/server", "--name=web"},
		Args:       []string{"--ip", "10.1.0.7", "$(POD_IP)", "$(MISSING)"},
		WorkingDir: "/srv",
		Envs: []*runtimeapi.KeyValue{
			{Key: "PROG", Value: []byte("server")},
			{Key: "POD_NAME", Value: []byte("web")},
			{Key: "POD_IP", Value: []byte("10.1.0.7")},
			{Key: "URL", Value: []byte("http://10.1.0.7:8080/server")},
		},
		Labels: map[string]string{
			podstate.LabelPodUID:        "uid-1",
			podstate.LabelPodName:       "web",
			podstate.LabelPodNamespace:  "prod",
			podstate.LabelManaged:       "true",
			podstate.LabelContainerName: "app",
		},
		Annotations: map[string]string{
			podstate.AnnotationContainerHash:            ContainerHash(c),
			podstate.AnnotationRestartCount:             "3",
			podstate.AnnotationTerminationGrace:         "45",
			podstate.AnnotationTerminationMessagePth:    "/dev/termination-log",
			podstate.AnnotationTerminationMessagePolicy: "",
		},
		LogPath: "app/3.log",
		// The managed hosts file, last (kubelet_pods.go makeMounts).
		Mounts:    []*runtimeapi.Mount{{ContainerPath: "/etc/hosts", HostPath: "/var/lib/lockstep/pods/uid-1/etc-hosts"}},
		Stdin:     true,
		StdinOnce: true,
		Tty:       true,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{
				CpuShares:          512,
				CpuPeriod:          100000,
				CpuQuota:           200000,
				MemoryLimitInBytes: 512 << 20,
				OomScoreAdj:        1000 - 1000*(256<<20)/(8<<30), // Burstable: 969
			},
			SecurityContext: baseContainerSC(),
		},
	}
	diffProto(t, want, got)
}

func TestContainerLabelsAndAnnotationsRoundTrip(t *testing.T) {
	pod := testPod()
	for _, rc := range []int{0, 1, 7, 1000} {
		got, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{RestartCount: rc}, testNode())
		if err != nil {
			t.Fatal(err)
		}
		ref, err := podstate.PodRefFromLabels(got.Labels)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(RefOf(pod), ref); d != "" {
			t.Errorf("PodRefFromLabels (-want +got):\n%s", d)
		}
		if got.Labels[podstate.LabelContainerName] != "app" {
			t.Errorf("container name label = %q", got.Labels[podstate.LabelContainerName])
		}
		if n := podstate.RestartCountFromAnnotations(got.Annotations); n != rc {
			t.Errorf("RestartCountFromAnnotations = %d, want %d", n, rc)
		}
		if got.Metadata.Attempt != uint32(rc) || got.LogPath != ContainerLogPath("app", rc) {
			t.Errorf("attempt %d, log path %q for restart count %d", got.Metadata.Attempt, got.LogPath, rc)
		}
		if h := got.Annotations[podstate.AnnotationContainerHash]; h != ContainerHash(&pod.Spec.Containers[0]) {
			t.Errorf("hash annotation = %q", h)
		}
		if g := got.Annotations[podstate.AnnotationTerminationGrace]; g != "30" {
			t.Errorf("grace annotation without a pod grace = %q, want the default 30", g)
		}
	}
}

func TestContainerPodIPs(t *testing.T) {
	env := []corev1.EnvVar{
		{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "IPS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
		{Name: "HOST", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
	}
	tests := []struct {
		name        string
		hostNetwork bool
		podIPs      []string
		want        map[string]string
	}{
		{"pod network", false, []string{"fd01::7", "10.1.0.7"}, map[string]string{"IP": "10.1.0.7", "IPS": "10.1.0.7,fd01::7", "HOST": "10.0.0.5"}},
		{"pod network before the sandbox has an IP", false, nil, map[string]string{"IP": "", "IPS": "", "HOST": "10.0.0.5"}},
		{"host network takes the node's IPs", true, nil, map[string]string{"IP": "10.0.0.5", "IPS": "10.0.0.5", "HOST": "10.0.0.5"}},
		{"host network with sandbox IPs", true, []string{"10.0.0.6"}, map[string]string{"IP": "10.0.0.6", "IPS": "10.0.0.6", "HOST": "10.0.0.5"}},
	}
	for _, tt := range tests {
		pod := testPod(func(p *corev1.Pod) {
			p.Spec.HostNetwork = tt.hostNetwork
			p.Spec.Containers[0].Env = env
		})
		got, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{PodIPs: tt.podIPs}, testNode())
		if err != nil {
			t.Fatal(err)
		}
		gotEnv := map[string]string{}
		for _, kv := range got.Envs {
			gotEnv[kv.Key] = string(kv.Value)
		}
		if d := cmp.Diff(tt.want, gotEnv); d != "" {
			t.Errorf("%s: env (-want +got):\n%s", tt.name, d)
		}
	}
}

// TestContainerConfigWithImageRef: a resolved image reference changes the
// image spec only.
func TestContainerConfigWithImageRef(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	})
	c := &pod.Spec.Containers[0]
	plain, err := ContainerConfigWith(pod, c, ContainerOptions{RestartCount: 2, PodIPs: []string{"10.1.0.7"}}, testNode())
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := ContainerConfigWith(pod, c, ContainerOptions{RestartCount: 2, PodIPs: []string{"10.1.0.7"}, ImageRef: "sha256:abc"}, testNode())
	if err != nil {
		t.Fatal(err)
	}
	diffProto(t, &runtimeapi.ImageSpec{Image: "sha256:abc", UserSpecifiedImage: "busybox:1"}, resolved.Image)
	resolved.Image = plain.Image
	diffProto(t, plain, resolved)
}

func TestContainerConfigErrors(t *testing.T) {
	pod := testPod()
	_, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{RestartCount: -1}, testNode())
	if err == nil || !strings.HasPrefix(err.Error(), `container "app" of pod prod/web: `) {
		t.Errorf("negative restart count: err = %v", err)
	}
}

func TestContainerConfigDoesNotAliasSpec(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].Command = []string{"sh"}
		p.Spec.Containers[0].Args = []string{"-c", "true"}
	})
	got, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{}, testNode())
	if err != nil {
		t.Fatal(err)
	}
	got.Command[0], got.Args[0] = "changed", "changed"
	if pod.Spec.Containers[0].Command[0] != "sh" || pod.Spec.Containers[0].Args[0] != "-c" {
		t.Errorf("config slices alias the spec: %v %v", pod.Spec.Containers[0].Command, pod.Spec.Containers[0].Args)
	}
}
