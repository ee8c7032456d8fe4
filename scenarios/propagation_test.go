package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// TestPropagationRootSharedOnceAndModesPassed: the agent makes its root
// directory a shared mount at start, once across restarts (no stacked
// bind mount); a privileged container's Bidirectional mount and another's
// HostToContainer mount of an emptyDir reach the runtime with those
// modes; the checker's propagation invariants hold throughout.
func TestPropagationRootSharedOnceAndModesPassed(t *testing.T) {
	h := start(t, 34)
	c := NewChecker(h)
	if !h.Mounts.Shared(podspec.DefaultRootDir) {
		t.Fatalf("the root directory %s is not shared after the agent started", podspec.DefaultRootDir)
	}
	pod := mustCreate(t, h, NewPod("prop", h.NodeName, WithVolume(emptyDir("shared")),
		MountsPropagated("app", "shared", "/mnt", corev1.MountPropagationBidirectional), Privileged("app"),
		MountsPropagated("side", "shared", "/mnt", corev1.MountPropagationHostToContainer)))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "prop", corev1.PodRunning, true) })
	got := map[string]runtimeapi.MountPropagation{}
	for _, ct := range PodContainers(h, pod.UID) {
		for _, m := range h.Runtime.TrueMounts(ct.ID) {
			if m.GetContainerPath() == "/mnt" {
				got[ct.Name] = m.GetPropagation()
			}
		}
	}
	want := map[string]runtimeapi.MountPropagation{
		"app":  runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL,
		"side": runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("propagation given to the runtime (-want +got):\n%s", diff)
	}
	for range 2 {
		h.CrashAgent()
		h.StartAgent()
		runChecked(t, h, c, 5*time.Second)
	}
	if n := h.Mounts.Binds(podspec.DefaultRootDir); n != 1 {
		t.Errorf("the root directory was bind-mounted onto itself %d times over three starts, want once", n)
	}
	if err := h.API.User().DeletePodGracefully("default", "prop", nil); err != nil {
		t.Fatal(err)
	}
	runChecked(t, h, c, 40*time.Second)
}

// TestPropagationUnprivilegedBidirectionalRefused: a container that asks
// for Bidirectional propagation without being privileged (a pod API
// validation would refuse; the simulated apiserver does not validate) is
// never created: CreateContainerConfigError with the validation's words.
func TestPropagationUnprivilegedBidirectionalRefused(t *testing.T) {
	h := start(t, 35)
	c := NewChecker(h)
	mustCreate(t, h, NewPod("rogue", h.NodeName, WithVolume(emptyDir("shared")),
		MountsPropagated("app", "shared", "/mnt", corev1.MountPropagationBidirectional)))
	runChecked(t, h, c, 20*time.Second)
	p, err := h.API.User().GetPod("default", "rogue")
	if err != nil {
		t.Fatal(err)
	}
	var w *corev1.ContainerStateWaiting
	if len(p.Status.ContainerStatuses) == 1 {
		w = p.Status.ContainerStatuses[0].State.Waiting
	}
	want := &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError",
		Message: `container "app" of pod default/rogue: volumeMount "shared": Bidirectional mount propagation is available only to privileged containers`}
	if diff := cmp.Diff(want, w); diff != "" {
		t.Errorf("waiting state (-want +got):\n%s", diff)
	}
}

// TestPropagationNodeSuiteReadOnlyPod runs the node suite's pod of "Mount
// recursive read-only … when the runtime does not support recursive
// read-only mounts should accept non-recursive read-only mounts"
// (test/e2e_node/mount_rro_linux_test.go podForRROUnsupported) on a
// runtime without recursive read-only mounts: privileged init containers
// with a Bidirectional emptyDir around one with four mounts of it. The
// pod succeeds, the propagation invariants hold, and the second init
// container's volumeMounts are Disabled for the read-only mounts and
// unset for the read-write one, as the spec checks.
func TestPropagationNodeSuiteReadOnlyPod(t *testing.T) {
	h := start(t, 36)
	c := NewChecker(h)
	ifPossible, disabled := corev1.RecursiveReadOnlyIfPossible, corev1.RecursiveReadOnlyDisabled
	mustCreate(t, h, NewPod("mount-ro", h.NodeName, WithVolume(emptyDir("mnt")),
		Init("mount", 200*time.Millisecond, 0), Init("test", 200*time.Millisecond, 0), Init("unmount", 200*time.Millisecond, 0),
		MountsPropagated("mount", "mnt", "/mnt", corev1.MountPropagationBidirectional), Privileged("mount"),
		MountsPropagated("unmount", "mnt", "/mnt", corev1.MountPropagationBidirectional), Privileged("unmount"),
		Exits("app", 200*time.Millisecond, 0),
		func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Spec.InitContainers[1].VolumeMounts = []corev1.VolumeMount{
				{Name: "mnt", MountPath: "/mnt-rro-if-possible", ReadOnly: true, RecursiveReadOnly: &ifPossible},
				{Name: "mnt", MountPath: "/mnt-rro-disabled", ReadOnly: true, RecursiveReadOnly: &disabled},
				{Name: "mnt", MountPath: "/mnt-ro", ReadOnly: true},
				{Name: "mnt", MountPath: "/mnt-rw"},
			}
		}))
	runUntil(t, h, "the pod succeeds", time.Minute, func() bool {
		p, err := h.API.User().GetPod("default", "mount-ro")
		return err == nil && p.Status.Phase == corev1.PodSucceeded
	})
	runChecked(t, h, c, 2*time.Second)
	p, err := h.API.User().GetPod("default", "mount-ro")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Status.InitContainerStatuses) != 3 {
		t.Fatalf("%d init container statuses, want 3", len(p.Status.InitContainerStatuses))
	}
	want := []corev1.VolumeMountStatus{
		{Name: "mnt", MountPath: "/mnt-rro-if-possible", ReadOnly: true, RecursiveReadOnly: &disabled},
		{Name: "mnt", MountPath: "/mnt-rro-disabled", ReadOnly: true, RecursiveReadOnly: &disabled},
		{Name: "mnt", MountPath: "/mnt-ro", ReadOnly: true, RecursiveReadOnly: &disabled},
		{Name: "mnt", MountPath: "/mnt-rw"},
	}
	if diff := cmp.Diff(want, p.Status.InitContainerStatuses[1].VolumeMounts); diff != "" {
		t.Errorf("volumeMounts of init container test (-want +got):\n%s", diff)
	}
}
