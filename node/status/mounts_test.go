package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

func TestRecursiveReadOnlyResolution(t *testing.T) {
	mode := func(m corev1.RecursiveReadOnlyMode) *corev1.RecursiveReadOnlyMode { return &m }
	prop := corev1.MountPropagationHostToContainer
	tests := []struct {
		name     string
		m        corev1.VolumeMount
		rro      bool // the runtime supports it
		want     bool
		wantMode *corev1.RecursiveReadOnlyMode // in the status
	}{
		{"read-write", corev1.VolumeMount{Name: "v"}, true, false, nil},
		{"read-only unset", corev1.VolumeMount{Name: "v", ReadOnly: true}, true, false, mode(corev1.RecursiveReadOnlyDisabled)},
		{"read-only Disabled", corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyDisabled)}, true, false, mode(corev1.RecursiveReadOnlyDisabled)},
		{"IfPossible, supported", corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyIfPossible)}, true, true, mode(corev1.RecursiveReadOnlyEnabled)},
		{"IfPossible, unsupported", corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyIfPossible)}, false, false, mode(corev1.RecursiveReadOnlyDisabled)},
		{"Enabled, supported", corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyEnabled)}, true, true, mode(corev1.RecursiveReadOnlyEnabled)},
		// Upstream logs the resolution error and reports Disabled.
		{"Enabled, unsupported", corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyEnabled)}, false, false, mode(corev1.RecursiveReadOnlyDisabled)},
		{"Enabled with propagation", corev1.VolumeMount{Name: "v", ReadOnly: true, RecursiveReadOnly: mode(corev1.RecursiveReadOnlyEnabled), MountPropagation: &prop}, true, false, mode(corev1.RecursiveReadOnlyDisabled)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RecursiveReadOnly(tc.m, tc.rro); got != tc.want {
				t.Errorf("RecursiveReadOnly = %v, want %v", got, tc.want)
			}
			c := &corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{tc.m}}
			want := []corev1.VolumeMountStatus{{Name: "v", ReadOnly: tc.m.ReadOnly, RecursiveReadOnly: tc.wantMode}}
			if diff := cmp.Diff(want, mountStatuses(c, tc.rro)); diff != "" {
				t.Errorf("mountStatuses (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVolumeMountsInEveryStatus: every container kind lists its spec's
// mounts from the first status on, whether it has run or not, and keeps
// them once the pod is terminal.
func TestVolumeMountsInEveryStatus(t *testing.T) {
	pod := withInit(newPod(corev1.RestartPolicyNever, "app"), "setup")
	pod.Spec.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "info", MountPath: "/etc/podinfo"},
		{Name: "data", MountPath: "/data", ReadOnly: true},
	}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/w"}},
	}}}
	disabled := corev1.RecursiveReadOnlyDisabled
	want := map[string][]corev1.VolumeMountStatus{
		"setup": {{Name: "work", MountPath: "/work"}},
		"app":   {{Name: "info", MountPath: "/etc/podinfo"}, {Name: "data", MountPath: "/data", ReadOnly: true, RecursiveReadOnly: &disabled}},
		"debug": {{Name: "work", MountPath: "/w"}},
	}
	mounts := func(s corev1.PodStatus) map[string][]corev1.VolumeMountStatus {
		out := map[string][]corev1.VolumeMountStatus{}
		for _, l := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
			for _, cs := range l {
				out[cs.Name] = cs.VolumeMounts
			}
		}
		return out
	}
	for name, s := range map[string]corev1.PodStatus{
		"nothing in the runtime": Generate(pod, nil, nil, nil, node, at(1)),
		"init running":           Generate(pod, world(true, running("setup", "i1", 0, 1)), nil, nil, node, at(2)),
		"app exited": Generate(pod, world(true,
			exited("setup", "i1", 0, 1, 2, 0, ""), exited("app", "c1", 0, 3, 4, 0, "")), nil, nil, node, at(5)),
	} {
		if diff := cmp.Diff(want, mounts(s)); diff != "" {
			t.Errorf("%s: volumeMounts (-want +got):\n%s", name, diff)
		}
	}
}

// TestEphemeralStartedUnset: an ephemeral container's status never sets
// started, waiting, running or terminated (upstream's prober sets it for
// init and regular containers only).
func TestEphemeralStartedUnset(t *testing.T) {
	pod := newPod(corev1.RestartPolicyAlways, "app")
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	for name, rs := range map[string]*podstate.PodStatus{
		"waiting":    world(true, running("app", "c1", 0, 1)),
		"running":    world(true, running("app", "c1", 0, 1), running("debug", "d1", 0, 2)),
		"terminated": world(true, running("app", "c1", 0, 1), exited("debug", "d1", 0, 2, 3, 3, "")),
	} {
		s := Generate(pod, rs, nil, nil, node, at(5))
		if got := s.EphemeralContainerStatuses[0].Started; got != nil {
			t.Errorf("%s: started = %v, want unset", name, *got)
		}
		s = Terminate(pod, s, at(6))
		if got := s.EphemeralContainerStatuses[0].Started; got != nil {
			t.Errorf("%s, terminated pod: started = %v, want unset", name, *got)
		}
	}
}
