package volume_test

import (
	"io/fs"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// TestVolumeDirectoryModes: every volume the agent keeps below the pod's
// directory is world-writable as upstream's emptyDir setupDir leaves it
// (upstream wraps configMap, secret, downwardAPI and projected volumes in
// an emptyDir): 0777 on the disk, 1777 as a tmpfs root (secret,
// downwardAPI, projected, medium Memory); with an fsGroup, setgid too.
func TestVolumeDirectoryModes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fsGroup bool
		setgid  fs.FileMode
	}{{name: "no fsGroup"}, {name: "fsGroup", fsGroup: true, setgid: fs.ModeSetgid}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldWith(t, true)
			w.api.User().PutConfigMap(&corev1.ConfigMap{ObjectMeta: metaName("cfg"), Data: map[string]string{"a": "1"}})
			w.api.User().PutSecret(&corev1.Secret{ObjectMeta: metaName("sec"), Data: map[string][]byte{"b": []byte("2")}})
			pod := w.pod("p",
				corev1.Volume{Name: "disk", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				corev1.Volume{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
				corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}}},
				corev1.Volume{Name: "down", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
				corev1.Volume{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}}},
			)
			if tc.fsGroup {
				gid := int64(2000)
				pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: &gid}
			}
			w.m.AddPod(pod)
			if err, done := w.wait(pod, time.Minute); !done || err != nil {
				t.Fatalf("WaitForPod: done=%v err=%v", done, err)
			}
			disk, tmpfs := 0o777|tc.setgid, 0o777|fs.ModeSticky|tc.setgid
			want := map[string]fs.FileMode{"disk": disk, "mem": tmpfs, "cm": disk, "sec": tmpfs, "down": tmpfs, "proj": tmpfs}
			plugins := map[string]string{"disk": podspec.PluginEmptyDir, "mem": podspec.PluginEmptyDir, "cm": podspec.PluginConfigMap,
				"sec": podspec.PluginSecret, "down": podspec.PluginDownwardAPI, "proj": podspec.PluginProjected}
			got := map[string]fs.FileMode{}
			for name, plugin := range plugins {
				info, err := w.files.Stat(volDir(pod, plugin, name))
				if err != nil {
					t.Fatal(err)
				}
				got[name] = info.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("directory modes (-want +got):\n%s", diff)
			}
		})
	}
}
