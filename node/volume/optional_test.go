package volume_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/volume"
)

// optionalVolumes are optional configMap, secret and projected volumes of
// objects that do not exist.
func optionalVolumes(optional bool) []corev1.Volume {
	opt := &optional
	return []corev1.Volume{
		{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "nosuch"}, Optional: opt}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nosuch", Optional: opt}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "nosuch-p"}, Optional: opt}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "nosuch-p"}, Optional: opt}},
		}}}},
	}
}

// TestOptionalMissingObjectsSetUpEmpty: optional configMap, secret and
// projected sources whose objects the apiserver does not show set up
// empty with no FailedMount, as upstream's plugins do, whether the answer
// is NotFound or Forbidden (the node authorizer's answer for an object it
// cannot relate to the node yet: here the apiserver's copy of the pod
// does not name them); the same volumes, not optional, fail.
func TestOptionalMissingObjectsSetUpEmpty(t *testing.T) {
	for _, tc := range []struct {
		name           string
		optional, seen bool // seen: the apiserver's pod names the objects (NotFound), else Forbidden
		wantErr        string
	}{
		{name: "optional, not found", optional: true, seen: true},
		{name: "optional, forbidden", optional: true},
		{name: "required, forbidden", wantErr: "is forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			vols := optionalVolumes(tc.optional)
			var pod *corev1.Pod
			if tc.seen {
				pod = w.pod("p", vols...)
			} else {
				pod = w.pod("p")
				pod.Spec.Volumes = vols
			}
			w.m.AddPod(pod)
			err, done := w.wait(pod, 3*time.Minute)
			events := countEvents(w.api, volume.ReasonFailedMount)
			if tc.wantErr != "" {
				if !done || err == nil || !strings.Contains(err.Error(), tc.wantErr) || events == 0 {
					t.Fatalf("WaitForPod: done=%v err=%v, %d FailedMount events; want an error with %q and events", done, err, events, tc.wantErr)
				}
				return
			}
			if !done || err != nil || events != 0 {
				t.Fatalf("WaitForPod: done=%v err=%v, %d FailedMount events; want set up with none", done, err, events)
			}
			for _, v := range []struct{ plugin, name string }{{podspec.PluginConfigMap, "cm"}, {podspec.PluginSecret, "sec"}, {podspec.PluginProjected, "proj"}} {
				dir := volDir(pod, v.plugin, v.name)
				entries, err := w.files.ReadDir(dir)
				if err != nil {
					t.Fatalf("volume %s: %v", v.name, err)
				}
				for _, e := range entries {
					if !strings.HasPrefix(e.Name(), "..") {
						t.Errorf("volume %s publishes %s; want it empty", v.name, e.Name())
					}
				}
			}
		})
	}
}
