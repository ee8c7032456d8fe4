package volume_test

import (
	"context"
	"errors"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/volume"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// TestShareRootDirOnceAcrossRestarts: the root directory is created and
// made shared with one bind mount; a restarted agent (a second call)
// finds it shared and stacks nothing; what lies below it is shared too.
func TestShareRootDirOnceAcrossRestarts(t *testing.T) {
	files := memfs.New()
	mounts := memfs.NewMounts(files)
	for range 2 {
		if err := volume.ShareRootDir(files, mounts, root); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]any{"binds": mounts.Binds(root), "pods shared": mounts.Shared(podspec.PodsDir(root)), "/var shared": mounts.Shared("/var")}
	want := map[string]any{"binds": 1, "pods shared": true, "/var shared": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after two starts (-want +got):\n%s", diff)
	}
}

// TestShareRootDirDefaultsAndNoMounter: "" is the default root; without a
// mounter nothing is done.
func TestShareRootDirDefaultsAndNoMounter(t *testing.T) {
	files := memfs.New()
	mounts := memfs.NewMounts(files)
	if err := volume.ShareRootDir(files, mounts, ""); err != nil {
		t.Fatal(err)
	}
	if !mounts.Shared(podspec.DefaultRootDir) {
		t.Errorf("the default root %s is not shared", podspec.DefaultRootDir)
	}
	if err := volume.ShareRootDir(files, nil, root); err != nil {
		t.Errorf("without a mounter: %v, want nothing done", err)
	}
}

// failingShare is a mounter whose MakeShared fails.
type failingShare struct{ *memfs.Mounts }

func (failingShare) MakeShared(string) error { return errors.New("operation not permitted") }

var _ deps.Mounter = failingShare{}

func TestShareRootDirErrorNamesTheDirAndCause(t *testing.T) {
	files := memfs.New()
	err := volume.ShareRootDir(files, failingShare{memfs.NewMounts(files)}, "/data/lockstep")
	const want = "configure the root directory /data/lockstep as a shared mount: operation not permitted"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestTeardownUnmountsMountsMadeInsideVolumes: a tmpfs a container with
// Bidirectional propagation mounted inside an emptyDir (here two, one
// inside the other) is unmounted before the pod's directory goes: none is
// left behind, and the directory is removed.
func TestTeardownUnmountsMountsMadeInsideVolumes(t *testing.T) {
	w := newWorldWith(t, true)
	pod := w.pod("p", corev1.Volume{Name: "mnt", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	w.m.AddPod(pod)
	if err, done := w.wait(pod, time.Minute); !done || err != nil {
		t.Fatalf("WaitForPod: done=%v err=%v", done, err)
	}
	dir := volDir(pod, podspec.PluginEmptyDir, "mnt")
	for _, sub := range []string{"tmpfs", "tmpfs/inner"} {
		if err := w.files.MkdirAll(path.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
		if err := w.mounts.MountTmpfs(path.Join(dir, sub), 0); err != nil {
			t.Fatal(err)
		}
	}
	vols := podspec.PodVolumesDir(root, pod.UID)
	w.m.RemovePod(pod.UID)
	w.run(5 * time.Second)
	left, _ := w.mounts.MountsUnder(vols)
	if len(left) > 0 {
		t.Errorf("mounts left behind: %s", strings.Join(left, ", "))
	}
	if _, err := w.files.Stat(podspec.PodDir(root, pod.UID)); err == nil {
		t.Errorf("the pod's directory is still there")
	}
}

// stuckUnmount is a mounter whose Unmount leaves the mount in place.
type stuckUnmount struct{ *memfs.Mounts }

func (stuckUnmount) Unmount(string) error { return nil }

// TestTeardownKeepsThePodDirWhileAMountStays: a mount below the volumes
// that will not go keeps the pod's directory (removing it would empty
// the mounted file system).
func TestTeardownKeepsThePodDirWhileAMountStays(t *testing.T) {
	w := newWorldWith(t, false)
	files := w.files
	mounts := memfs.NewMounts(files)
	m := volume.New(w.k.Deps().Core, volume.Ports{Files: files, Mounts: stuckUnmount{mounts}}, volume.Config{Node: podspec.NodeInfo{RootDir: root, NodeName: "n1"}})
	ctx, cancel := w.k.WithCancel(context.Background())
	t.Cleanup(cancel)
	m.Start(ctx)
	pod := w.pod("p", corev1.Volume{Name: "mnt", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	m.AddPod(pod)
	w.run(3 * time.Second)
	inner := path.Join(volDir(pod, podspec.PluginEmptyDir, "mnt"), "tmpfs")
	if err := files.MkdirAll(inner); err != nil {
		t.Fatal(err)
	}
	if err := mounts.MountTmpfs(inner, 0); err != nil {
		t.Fatal(err)
	}
	files.WriteFile(path.Join(inner, "data"), []byte("x"))
	m.RemovePod(pod.UID)
	w.run(5 * time.Second)
	if got := w.read(path.Join(inner, "data")); got != "x" {
		t.Errorf("the mounted file system's content is %q, want it kept while the mount stays", got)
	}
}
