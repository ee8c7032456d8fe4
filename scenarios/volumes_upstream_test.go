package scenarios

import (
	"io/fs"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// fileOwner is a host path's group and mode, as a test reads it.
type fileOwner struct {
	GID  int
	Mode string
}

func lookOwner(t *testing.T, fsys interface {
	Stat(string) (fs.FileInfo, error)
	Owner(string) (int, int, bool)
}, p string) fileOwner {
	t.Helper()
	info, err := fsys.Stat(p)
	if err != nil {
		t.Fatalf("stat %s: %v", p, err)
	}
	_, g, _ := fsys.Owner(p)
	return fileOwner{g, (info.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky | fs.ModeDir)).String()}
}

// TestVolumesLocalPVGivenToFSGroup (issue 27, known difference 4; the
// harness's fsgroup-local-pv): a pod with fsGroup 2000 mounting a claim
// bound to a local PersistentVolume finds the volume's directory given to
// the group (group 2000, group rwx, setgid) and its files group-writable,
// as upstream's local plugin leaves them on the first mount, so a
// non-root app can write.
func TestVolumesLocalPVGivenToFSGroup(t *testing.T) {
	t.Parallel()
	h := start(t, 131)
	c := NewChecker(h)
	_ = h.Files.MkdirAll("/mnt/disks/pv1")
	h.Files.WriteFile("/mnt/disks/pv1/seed", []byte("x"))
	bindLocalClaim(h, "data", "local-pv-1", "/mnt/disks/pv1")
	uid, gid := int64(1000), int64(2000)
	mustCreate(t, h, NewPod("writer", h.NodeName, WithVolume(claimVolume("data", "data")), Mounts("app", "data", "/data"),
		func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, FSGroup: &gid}
		}))
	runChecked(t, h, c, time.Minute)
	if !PodIs(h, "default", "writer", corev1.PodRunning, true) {
		t.Fatal("the pod does not run")
	}
	got := map[string]fileOwner{"dir": lookOwner(t, h.Files, "/mnt/disks/pv1"), "seed": lookOwner(t, h.Files, "/mnt/disks/pv1/seed")}
	want := map[string]fileOwner{"dir": {2000, "dgrwxrwxr-x"}, "seed": {2000, "-rw-rw-r--"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("local PersistentVolume ownership (-want +got):\n%s", diff)
	}
}

// TestVolumesOptionalMissingObjectsMountEmpty (issue 27 E10 and F2; the
// harness's optional-missing): optional configMap and secret volumes
// whose objects do not exist set up empty with no FailedMount event, the
// pod runs, and the volumes' directories are world-writable as upstream's
// wrapping emptyDir makes them (0777 on disk for the configMap, a tmpfs
// root 1777 for the secret).
func TestVolumesOptionalMissingObjectsMountEmpty(t *testing.T) {
	t.Parallel()
	h := start(t, 132)
	c := NewChecker(h)
	yes := true
	pod := mustCreate(t, h, NewPod("opt", h.NodeName,
		WithVolume(corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "nosuch"}, Optional: &yes}}}),
		WithVolume(corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nosuch", Optional: &yes}}}),
		Mounts("app", "cm", "/cm"), Mounts("app", "sec", "/sec")))
	runChecked(t, h, c, 30*time.Second)
	if !PodIs(h, "default", "opt", corev1.PodRunning, true) {
		t.Fatal("the pod does not run")
	}
	for _, e := range h.API.User().Events() {
		if e.Reason == "FailedMount" {
			t.Errorf("FailedMount for an optional volume: %s", e.Message)
		}
	}
	got := map[string]fileOwner{}
	for _, m := range []string{"/cm", "/sec"} {
		dir := mountOf(h, pod.UID, "app", m)
		got[m] = lookOwner(t, h.Files, dir)
		entries, err := h.Files.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name()[0] != '.' {
				t.Errorf("%s publishes %s; want it empty", m, e.Name())
			}
		}
	}
	if diff := cmp.Diff(map[string]fileOwner{"/cm": {0, "drwxrwxrwx"}, "/sec": {0, "dtrwxrwxrwx"}}, got); diff != "" {
		t.Errorf("volume directories (-want +got):\n%s", diff)
	}
}
