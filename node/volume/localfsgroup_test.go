package volume_test

import (
	"io/fs"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// ownerMode is what the test reads of a path: its group and mode bits.
type ownerMode struct {
	GID  int
	Mode fs.FileMode
}

// TestLocalVolumeGivenToFSGroupOnFirstMount: a local PersistentVolume
// mounted read-write by a pod with an fsGroup is given to the group
// before the first link, as upstream's local plugin does on its first
// mount (SetVolumeOwnership: group rw, setgid directories); with
// fsGroupChangePolicy OnRootMismatch the walk is skipped when the root
// already has the group, group rwx and setgid. A read-only claim, a
// hostPath PersistentVolume or a pod without fsGroup changes nothing.
func TestLocalVolumeGivenToFSGroupOnFirstMount(t *testing.T) {
	gid := int64(2000)
	onRoot := corev1.FSGroupChangeOnRootMismatch
	root, file := ownerMode{0, 0o755}, ownerMode{0, 0o644}
	owned, ownedFile := ownerMode{2000, 0o775 | fs.ModeSetgid}, ownerMode{2000, 0o664}
	for _, tc := range []struct {
		name           string
		fsGroup        *int64
		policy         *corev1.PodFSGroupChangePolicy
		readOnly       bool
		hostPath       bool
		rootOwned      bool // the root already has the group, rwx and setgid
		wantDir, wantF ownerMode
	}{
		{name: "fsGroup, policy Always", fsGroup: &gid, wantDir: owned, wantF: ownedFile},
		{name: "OnRootMismatch, root differs", fsGroup: &gid, policy: &onRoot, wantDir: owned, wantF: ownedFile},
		{name: "OnRootMismatch, root matches", fsGroup: &gid, policy: &onRoot, rootOwned: true, wantDir: owned, wantF: file},
		{name: "Always, root matches", fsGroup: &gid, rootOwned: true, wantDir: owned, wantF: ownedFile},
		{name: "read-only claim", fsGroup: &gid, readOnly: true, wantDir: root, wantF: file},
		{name: "hostPath PersistentVolume", fsGroup: &gid, hostPath: true, wantDir: root, wantF: file},
		{name: "no fsGroup", wantDir: root, wantF: file},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			_ = w.files.MkdirAll("/mnt/disks/d1")
			_ = w.files.Chmod("/mnt/disks/d1", 0o755)
			_ = w.files.CreateFile("/mnt/disks/d1/old", []byte("x"), 0o644)
			if tc.rootOwned {
				_ = w.files.Lchown("/mnt/disks/d1", -1, 2000)
				_ = w.files.Chmod("/mnt/disks/d1", 0o775|fs.ModeSetgid)
				tc.wantDir = owned
			}
			src := corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disks/d1"}}
			if tc.hostPath {
				src = corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/mnt/disks/d1"}}
			}
			w.bind("claim", "pv-1", src)
			pod := w.pod("p", claimVolume("data", "claim"))
			pod.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly = tc.readOnly
			pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: tc.fsGroup, FSGroupChangePolicy: tc.policy}
			w.m.AddPod(pod)
			if err, done := w.wait(pod, time.Minute); !done || err != nil {
				t.Fatalf("WaitForPod: done=%v err=%v", done, err)
			}
			read := func(p string) ownerMode {
				_, g, _ := w.files.Owner(p)
				info, err := w.files.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				return ownerMode{g, info.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)}
			}
			got := map[string]ownerMode{"dir": read("/mnt/disks/d1"), "file": read("/mnt/disks/d1/old")}
			if diff := cmp.Diff(map[string]ownerMode{"dir": tc.wantDir, "file": tc.wantF}, got); diff != "" {
				t.Errorf("ownership (-want +got):\n%s", diff)
			}
		})
	}
}
