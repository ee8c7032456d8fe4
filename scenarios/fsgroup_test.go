package scenarios

import (
	"io/fs"
	"path"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// TestVolumesFSGroupOwnership: with an fsGroup, the pod's emptyDir and
// its API data volumes belong to that group as upstream's
// SetVolumeOwnership leaves them (group rw — read-only for API data —
// on files, plus search and setgid on directories; an emptyDir is 0777),
// and the projected token, 0600 as written, is group-readable (0640) and
// owned by the user all containers run as. A pod without an fsGroup keeps
// root's group.
func TestVolumesFSGroupOwnership(t *testing.T) {
	h := start(t, 95)
	putRootCA(h)
	uid, gid := int64(1000), int64(2000)
	pod := mustCreate(t, h, NewPod("owned", h.NodeName, kubeAPIAccess, WithVolume(emptyDir("scratch")), Mounts("app", "scratch", "/scratch"),
		func(p *corev1.Pod) {
			policy := corev1.FSGroupChangeOnRootMismatch
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, FSGroup: &gid, FSGroupChangePolicy: &policy}
		}))
	plain := mustCreate(t, h, NewPod("plain", h.NodeName, WithVolume(emptyDir("scratch")), Mounts("app", "scratch", "/scratch")))
	runUntil(t, h, "the pods run", time.Minute, func() bool {
		return PodIs(h, "default", "owned", corev1.PodRunning, true) && PodIs(h, "default", "plain", corev1.PodRunning, true)
	})
	type owned struct {
		UID, GID int
		Mode     string
	}
	look := func(p string) owned {
		info, err := h.Files.Stat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		u, g, _ := h.Files.Owner(p)
		return owned{u, g, (info.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeDir)).String()}
	}
	scratch := mountOf(h, pod.UID, "app", "/scratch")
	sa := mountOf(h, pod.UID, "app", saMountPath)
	data, err := h.Files.Readlink(path.Join(sa, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]owned{
		"emptyDir":            look(scratch),
		"projected":           look(sa),
		"projected/..data":    look(path.Join(sa, data)),
		"projected/token":     look(path.Join(sa, "token")),
		"projected/ca.crt":    look(path.Join(sa, "ca.crt")),
		"projected/namespace": look(path.Join(sa, "namespace")),
		"plain emptyDir":      look(mountOf(h, plain.UID, "app", "/scratch")),
	}
	want := map[string]owned{
		"emptyDir":            {0, 2000, "dgrwxrwxrwx"},
		"projected":           {0, 2000, "dgrwxrwxrwx"}, // a tmpfs root: 1777 (sticky not shown), as upstream's
		"projected/..data":    {0, 2000, "dgrwxr-xr-x"},
		"projected/token":     {1000, 2000, "-rw-r-----"},
		"projected/ca.crt":    {0, 2000, "-rw-r--r--"},
		"projected/namespace": {0, 2000, "-rw-r--r--"},
		"plain emptyDir":      {0, 0, "drwxrwxrwx"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ownership (-want +got):\n%s", diff)
	}
	if want := podspec.PodVolumesDir("", pod.UID); len(scratch) <= len(want) {
		t.Errorf("emptyDir mounted from %q", scratch)
	}
	for _, e := range h.API.User().Events() {
		if e.Reason == "UnsupportedPodField" {
			t.Errorf("unexpected warning: %s", e.Message)
		}
	}
}

// TestVolumesSubPathTakesTheVolumeMode mirrors the conformance spec
// "EmptyDir volumes when FSGroup is specified nonexistent volume subPath
// should have the correct mode and owner": a subPath that does not exist
// yet is created with the volume directory's own mode (here an emptyDir
// under an fsGroup: 0777 with setgid), as upstream's SafeMakeDir, not
// 0755 — which would take the group's write access away.
func TestVolumesSubPathTakesTheVolumeMode(t *testing.T) {
	for _, tc := range []struct {
		medium corev1.StorageMedium
		want   string
	}{
		{corev1.StorageMediumDefault, "dgrwxrwxrwx"},
		// A tmpfs root is sticky, and stays so (upstream's dgtrwxrwxrwx).
		{corev1.StorageMediumMemory, "dgtrwxrwxrwx"},
	} {
		t.Run(string(tc.medium), func(t *testing.T) { testSubPathMode(t, tc.medium, tc.want) })
	}
}

func testSubPathMode(t *testing.T, medium corev1.StorageMedium, wantMode string) {
	h := start(t, 96)
	gid := int64(123)
	vol := emptyDir("scratch")
	vol.EmptyDir.Medium = medium
	pod := mustCreate(t, h, NewPod("sub", h.NodeName, WithVolume(vol),
		func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: &gid}
			c := &p.Spec.Containers[0]
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: "/test-volume", SubPath: "a/test-sub"})
		}))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "sub", corev1.PodRunning, true) })
	sub := mountOf(h, pod.UID, pod.Spec.Containers[0].Name, "/test-volume")
	volDir := path.Dir(path.Dir(sub))
	mode := func(p string) string {
		info, err := h.Files.Stat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		return info.Mode().String()
	}
	want := mode(volDir)
	if want != wantMode {
		t.Fatalf("emptyDir under an fsGroup has mode %s, want %s", want, wantMode)
	}
	for _, p := range []string{path.Dir(sub), sub} {
		if got := mode(p); got != want {
			t.Errorf("subPath directory %s has mode %s, want the volume's %s", p, got, want)
		}
	}
}
