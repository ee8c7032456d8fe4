package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerMounts(t *testing.T) {
	prop := func(p corev1.MountPropagationMode) *corev1.MountPropagationMode { return &p }
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/data/"}}},
			{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
			{Name: "roclaim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c", ReadOnly: true}}},
		}
		c := &p.Spec.Containers[0]
		c.Env = []corev1.EnvVar{{Name: "POD", Value: "web-0"}}
		c.VolumeMounts = []corev1.VolumeMount{
			{Name: "scratch", MountPath: "/scratch"},
			{Name: "cfg", MountPath: "/etc/cfg"},
			{Name: "host", MountPath: "/data", ReadOnly: true, MountPropagation: prop(corev1.MountPropagationHostToContainer)},
			{Name: "scratch", MountPath: "/logs", SubPathExpr: "logs/$(POD)"},
			{Name: "claim", MountPath: "/claim"},
			{Name: "roclaim", MountPath: "/roclaim"},
		}
	})
	node := testNode()
	node.RootDir = "/r"
	cfg, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{}, node)
	if err != nil {
		t.Fatal(err)
	}
	want := []*runtimeapi.Mount{
		{ContainerPath: "/scratch", HostPath: "/r/pods/uid-1/volumes/kubernetes.io~empty-dir/scratch"},
		{ContainerPath: "/etc/cfg", HostPath: "/r/pods/uid-1/volumes/kubernetes.io~configmap/cfg", Readonly: true},
		{ContainerPath: "/data", HostPath: "/srv/data", Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
		{ContainerPath: "/logs", HostPath: "/r/pods/uid-1/volumes/kubernetes.io~empty-dir/scratch/logs/web-0"},
		// A claim's directory is the volume manager's link to its
		// PersistentVolume's path; the claim's readOnly makes the mount
		// read-only, as upstream.
		{ContainerPath: "/claim", HostPath: "/r/pods/uid-1/volumes/kubernetes.io~local-volume/claim"},
		{ContainerPath: "/roclaim", HostPath: "/r/pods/uid-1/volumes/kubernetes.io~local-volume/roclaim", Readonly: true},
	}
	diffProto(t, want, cfg.Mounts)
}

func TestTerminationLogMount(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) { p.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log" })
	node := testNode()
	node.RootDir = "/r"
	log := TerminationLogPath(node.RootDir, pod.UID, pod.Spec.Containers[0].Name, "0000beef")
	cfg, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{TerminationLog: log}, node)
	if err != nil {
		t.Fatal(err)
	}
	want := []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: "/r/pods/uid-1/containers/" + pod.Spec.Containers[0].Name + "/0000beef"}}
	diffProto(t, want, cfg.Mounts)

	// No file, or no path: no mount.
	cfg, err = ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{}, node)
	if err != nil {
		t.Fatal(err)
	}
	diffProto(t, []*runtimeapi.Mount(nil), cfg.Mounts)
	pod.Spec.Containers[0].TerminationMessagePath = ""
	if cfg, err = ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{TerminationLog: log}, node); err != nil {
		t.Fatal(err)
	}
	diffProto(t, []*runtimeapi.Mount(nil), cfg.Mounts)
}

func TestContainerMountsRefused(t *testing.T) {
	bidi := corev1.MountPropagationBidirectional
	cases := []struct {
		name  string
		mount corev1.VolumeMount
		env   []corev1.EnvVar
		want  string
	}{
		{"subPath with ..", corev1.VolumeMount{Name: "v", MountPath: "/x", SubPath: "a/../../etc"}, nil, `subPath "a/../../etc" must not contain '..'`},
		{"absolute subPath", corev1.VolumeMount{Name: "v", MountPath: "/x", SubPath: "/etc"}, nil, `subPath "/etc" must be a relative path`},
		{"subPathExpr expanding to ..", corev1.VolumeMount{Name: "v", MountPath: "/x", SubPathExpr: "$(D)/x"},
			[]corev1.EnvVar{{Name: "D", Value: ".."}}, `subPath "../x" must not contain '..'`},
		{"bidirectional unprivileged", corev1.VolumeMount{Name: "v", MountPath: "/x", MountPropagation: &bidi}, nil,
			"Bidirectional mount propagation is available only to privileged containers"},
		{"unknown volume", corev1.VolumeMount{Name: "nope", MountPath: "/x"}, nil, `volumeMount "nope": no volume of that name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{tc.mount}
				p.Spec.Containers[0].Env = tc.env
			})
			_, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{}, testNode())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
