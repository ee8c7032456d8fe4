//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runtimeSupportsRRO is the node suite's supportsRRO
// (test/e2e_node/mount_rro_linux_test.go): the default runtime handler
// ("") is published with recursiveReadOnlyMounts true.
func (e *env) runtimeSupportsRRO(t *testing.T) bool {
	t.Helper()
	n, err := e.admin.CoreV1().Nodes().Get(context.Background(), e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range n.Status.RuntimeHandlers {
		if h.Name == "" && h.Features != nil && h.Features.RecursiveReadOnlyMounts != nil && *h.Features.RecursiveReadOnlyMounts {
			return true
		}
	}
	return false
}

// TestRecursiveReadOnlyUnsupportedAcceptsReadOnlyMounts is the node
// suite's "Mount recursive read-only … when the runtime does not support
// recursive read-only mounts should accept non-recursive read-only
// mounts" on this containerd (which reports no handler features): a
// privileged init container mounts a tmpfs inside an emptyDir with
// Bidirectional propagation (which needs lockstep's root directory to be
// a shared mount), the next init container sees it, writable, through
// read-only mounts asking IfPossible, Disabled or nothing (not
// recursive: the tmpfs below stays writable) and a read-write one, a
// third unmounts it; the pod succeeds and the second init container's
// volumeMounts statuses are Disabled for the read-only ones, unset for
// the read-write one.
func TestRecursiveReadOnlyUnsupportedAcceptsReadOnlyMounts(t *testing.T) {
	e := setup(t)
	if e.runtimeSupportsRRO(t) {
		t.Skip("the runtime supports recursive read-only mounts")
	}
	yes := true
	bidi := corev1.MountPropagationBidirectional
	ifPossible, disabled := corev1.RecursiveReadOnlyIfPossible, corev1.RecursiveReadOnlyDisabled
	privileged := func(name, cmd string) corev1.Container {
		return corev1.Container{Name: name, Image: busybox, ImagePullPolicy: corev1.PullNever, Command: []string{"sh", "-euxc", cmd},
			SecurityContext: &corev1.SecurityContext{Privileged: &yes},
			VolumeMounts:    []corev1.VolumeMount{{Name: "mnt", MountPath: "/mnt", MountPropagation: &bidi}}}
	}
	p := e.pod("mount-ro", false, "echo OK")
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	p.Spec.Volumes = []corev1.Volume{{Name: "mnt", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	p.Spec.InitContainers = []corev1.Container{
		privileged("mount", "mkdir -p /mnt/tmpfs && mount -t tmpfs none /mnt/tmpfs"),
		{Name: "test", Image: busybox, ImagePullPolicy: corev1.PullNever,
			Command: []string{"sh", "-euxc", "for f in rro-if-possible rro-disabled ro rw; do touch /mnt-$f/tmpfs/foo; done"},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "mnt", MountPath: "/mnt-rro-if-possible", ReadOnly: true, RecursiveReadOnly: &ifPossible},
				{Name: "mnt", MountPath: "/mnt-rro-disabled", ReadOnly: true, RecursiveReadOnly: &disabled},
				{Name: "mnt", MountPath: "/mnt-ro", ReadOnly: true},
				{Name: "mnt", MountPath: "/mnt-rw"},
			}},
		privileged("unmount", "umount /mnt/tmpfs"),
	}
	p = e.create(t, p)
	p = e.waitPod(t, p, 2*time.Minute, "Succeeded", func(p *corev1.Pod) bool {
		if p.Status.Phase == corev1.PodFailed {
			t.Fatalf("the pod failed: %+v", p.Status.InitContainerStatuses)
		}
		return p.Status.Phase == corev1.PodSucceeded
	})
	if n := len(p.Status.InitContainerStatuses); n != 3 {
		t.Fatalf("%d init container statuses, want 3", n)
	}
	got := map[string]string{}
	for _, m := range p.Status.InitContainerStatuses[1].VolumeMounts {
		if m.Name != "mnt" {
			continue
		}
		got[m.MountPath] = "<nil>"
		if m.RecursiveReadOnly != nil {
			got[m.MountPath] = string(*m.RecursiveReadOnly)
		}
	}
	want := map[string]string{"/mnt-rro-if-possible": "Disabled", "/mnt-rro-disabled": "Disabled", "/mnt-ro": "Disabled", "/mnt-rw": "<nil>"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("volumeMounts statuses of init container test (-want +got):\n%s", diff)
	}
}

// TestRecursiveReadOnlyUnsupportedRejectsEnabled is the node suite's
// "… should reject recursive read-only mounts": a read-only mount asking
// for recursiveReadOnly Enabled on this runtime waits in
// CreateContainerConfigError with the kubelet's message.
func TestRecursiveReadOnlyUnsupportedRejectsEnabled(t *testing.T) {
	e := setup(t)
	if e.runtimeSupportsRRO(t) {
		t.Skip("the runtime supports recursive read-only mounts")
	}
	enabled := corev1.RecursiveReadOnlyEnabled
	p := e.pod("mount-rro-unsupported", false, "echo this container should fail")
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	p.Spec.Volumes = []corev1.Volume{{Name: "mnt", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mnt", MountPath: "/mnt", ReadOnly: true, RecursiveReadOnly: &enabled}}
	p = e.create(t, p)
	const want = `failed to resolve recursive read-only mode: volume "mnt" requested recursive read-only mode, but it is not supported by the runtime`
	e.waitPod(t, p, time.Minute, "CreateContainerConfigError", func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w.Reason == "CreateContainerConfigError" && strings.Contains(w.Message, want)
	})
}
