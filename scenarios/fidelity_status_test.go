package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// Scenarios for the pod and node status fields the upstream kubelet
// v1.37.2 writes, found different by the differential harness (issue 27,
// docs/fidelity.md "Differences by cause": S*, N*, E11).

// agentStatuses returns every status the agent wrote for pod name of
// namespace default, oldest first.
func agentStatuses(h *harness.Harness, name string) []corev1.PodStatus {
	var out []corev1.PodStatus
	for _, r := range h.API.History() {
		if r.Kind == apiserver.KindPod && r.Actor == apiserver.ActorAgent && r.Name == name && r.Pod != nil &&
			r.Verb == apiserver.VerbPatchStatus {
			out = append(out, r.Pod.Status)
		}
	}
	return out
}

// TestFidelityVolumeMountStatuses (S10): every container status, init
// containers' included, lists the container's spec mounts (name, path,
// readOnly, and for a read-only one its resolved recursiveReadOnly,
// Disabled on a runtime without recursive read-only mounts) in every
// status the agent writes, as upstream's convertToAPIContainerStatuses.
func TestFidelityVolumeMountStatuses(t *testing.T) {
	h := start(t, 2701)
	rro := corev1.RecursiveReadOnlyIfPossible
	info := corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}
	mustCreate(t, h, NewPod("mounts", h.NodeName, Init("setup", 500*time.Millisecond, 0),
		WithVolume(info), WithVolume(emptyDir("data")),
		Mounts("setup", "data", "/data"), Mounts("app", "info", "/etc/podinfo"),
		func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data", ReadOnly: true, RecursiveReadOnly: &rro})
		}))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "mounts", corev1.PodRunning, true) })

	disabled := corev1.RecursiveReadOnlyDisabled
	want := map[string][]corev1.VolumeMountStatus{
		"setup": {{Name: "data", MountPath: "/data"}},
		"app": {{Name: "info", MountPath: "/etc/podinfo"},
			{Name: "data", MountPath: "/data", ReadOnly: true, RecursiveReadOnly: &disabled}},
	}
	writes := agentStatuses(h, "mounts")
	if len(writes) == 0 {
		t.Fatal("the agent wrote no status")
	}
	for i, s := range writes {
		got := map[string][]corev1.VolumeMountStatus{}
		for _, cs := range append(append([]corev1.ContainerStatus(nil), s.InitContainerStatuses...), s.ContainerStatuses...) {
			got[cs.Name] = cs.VolumeMounts
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("status write %d of %d (phase %s): volumeMounts (-want +got):\n%s", i+1, len(writes), s.Phase, diff)
		}
	}
}
