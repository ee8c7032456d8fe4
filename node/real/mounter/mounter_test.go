package mounter

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/mount-utils"
)

// Mount tables as /proc/self/mountinfo shows them.
const (
	privateRoot = `27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
22 27 0:21 / /proc rw,relatime - proc proc rw
`
	sharedRoot = `27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
22 27 0:21 / /proc rw,relatime shared:2 - proc proc rw
`
	// privateRoot after MakeShared of /var/lib/lockstep.
	rootBound = privateRoot + `90 27 254:0 /var/lib/lockstep /var/lib/lockstep rw,relatime shared:40 - ext4 /dev/vda rw
`
)

// call is one mount(2) call.
type call struct {
	Source, Target string
	Flags          uintptr
}

// fake is a Mounter over mount table table whose mount(2) records its
// calls and fails with fail.
func fake(t *testing.T, table string, fail error) (Mounter, *[]call) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(file, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	var calls []call
	return Mounter{mountInfo: file, sys: func(source, target, _ string, flags uintptr, _ string) error {
		calls = append(calls, call{source, target, flags})
		return fail
	}}, &calls
}

func TestMakeShared(t *testing.T) {
	const dir = "/var/lib/lockstep"
	bind := []call{{dir, dir, 0x1000}, {"", dir, 0x100000 | 0x4000}} // MS_BIND; MS_SHARED|MS_REC
	for _, tc := range []struct {
		name, table string
		want        []call
	}{
		{"private root: bind-mounted onto itself, then rshared", privateRoot, bind},
		{"already on a shared mount: left alone", sharedRoot, nil},
		{"made shared before (an agent restart): nothing stacked", rootBound, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, calls := fake(t, tc.table, nil)
			if err := m.MakeShared(dir + "/"); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *calls); diff != "" {
				t.Errorf("mount(2) calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMakeSharedErrorsNameTheDirAndCause(t *testing.T) {
	m, _ := fake(t, privateRoot, errors.New("operation not permitted"))
	err := m.MakeShared("/var/lib/lockstep")
	if err == nil || !strings.Contains(err.Error(), "bind-mount /var/lib/lockstep onto itself: operation not permitted") {
		t.Errorf("error %v, want the bind mount of the dir and its cause", err)
	}
	m.mountInfo = filepath.Join(t.TempDir(), "missing")
	if err := m.MakeShared("/var/lib/lockstep"); err == nil || !strings.Contains(err.Error(), "read the mount table") {
		t.Errorf("error %v, want the unreadable mount table named", err)
	}
}

func TestMountsUnder(t *testing.T) {
	const vols = "/var/lib/lockstep/pods/u1/volumes"
	table := rootBound +
		`91 90 0:50 / ` + vols + `/kubernetes.io~secret/sec rw - tmpfs tmpfs rw
92 90 0:51 / ` + vols + `/kubernetes.io~empty-dir/mnt/tmpfs rw shared:41 - tmpfs none rw
93 92 0:52 / ` + vols + `/kubernetes.io~empty-dir/mnt/tmpfs/inner rw - tmpfs none rw
94 90 0:53 / ` + vols + `/kubernetes.io~empty-dir/mnt/tmpfs rw - tmpfs none rw
95 90 0:54 / /var/lib/lockstep/pods/u2/volumes/x rw - tmpfs none rw
`
	m, _ := fake(t, table, nil)
	got, err := m.MountsUnder(vols)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		vols + "/kubernetes.io~empty-dir/mnt/tmpfs/inner",
		vols + "/kubernetes.io~empty-dir/mnt/tmpfs", // stacked twice
		vols + "/kubernetes.io~empty-dir/mnt/tmpfs",
		vols + "/kubernetes.io~secret/sec",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mounts under %s (-want +got):\n%s", vols, diff)
	}
}

func TestUnmountTree(t *testing.T) {
	const root = "/var/lib/lockstep"
	m, _ := fake(t, rootBound+`91 90 0:50 / `+root+`/pods/u1/volumes/kubernetes.io~secret/sec rw - tmpfs tmpfs rw
`, nil)
	var got []string
	m.umount = func(target string, _ int) error { got = append(got, target); return nil }
	if err := m.UnmountTree(root); err != nil {
		t.Fatal(err)
	}
	want := []string{root + "/pods/u1/volumes/kubernetes.io~secret/sec", root}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unmounted (-want +got):\n%s", diff)
	}
}

// TestMakeSharedOnThisHost makes a temporary directory shared with the
// real mount(2) twice (as root only): one bind mount, shared, and
// UnmountTree takes it away.
func TestMakeSharedOnThisHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	dir := t.TempDir()
	m := New()
	t.Cleanup(func() {
		if err := m.UnmountTree(dir); err != nil {
			t.Error(err)
		}
	})
	for range 2 {
		if err := m.MakeShared(dir); err != nil {
			t.Fatal(err)
		}
	}
	at := func() (n int, shared bool) {
		infos, err := mount.ParseMountInfo(selfMountInfo)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range infos {
			if i.MountPoint == dir {
				n++
				shared = slices.ContainsFunc(i.OptionalFields, func(f string) bool { return strings.HasPrefix(f, "shared:") })
			}
		}
		return n, shared
	}
	if n, shared := at(); n != 1 || !shared {
		t.Errorf("after two MakeShared: %d mounts at %s (shared: %v), want one, shared", n, dir, shared)
	}
	if err := m.UnmountTree(dir); err != nil {
		t.Fatal(err)
	}
	if n, _ := at(); n != 0 {
		t.Errorf("after UnmountTree: %d mounts at %s, want none", n, dir)
	}
}
