package memfs

import (
	"errors"
	"io/fs"
	"testing"
)

// TestAtomicLinkSwap: as osfiles' test of the same name, on the model.
func TestAtomicLinkSwap(t *testing.T) {
	f := New()
	for _, ts := range []string{"..1", "..2"} {
		_ = f.MkdirAll("/v/" + ts)
		if err := f.CreateFile("/v/"+ts+"/key", []byte(ts), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.Symlink("..1", "/v/..data"))
	must(f.Symlink("..data/key", "/v/key"))
	must(f.Symlink("..2", "/v/..data_tmp"))
	must(f.Rename("/v/..data_tmp", "/v/..data"))
	if data, err := f.ReadFile("/v/key"); err != nil || string(data) != "..2" {
		t.Fatalf("key = %q, %v; want the new content", data, err)
	}
	if info, err := f.Stat("/v/key"); err != nil || info.Mode().Perm() != 0o400 || !info.Mode().IsRegular() {
		t.Fatalf("Stat(key) = %v, %v; want a regular file of mode 0400", info, err)
	}
	if _, err := f.Readlink("/v/..data_tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("..data_tmp still there after the rename: %v", err)
	}
	if err := f.CreateFile("/nodir/x", nil, 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CreateFile without its directory: %v, want ErrNotExist", err)
	}
}

// TestMounts: a tmpfs needs its directory, and unmounting it takes its
// content along.
func TestMounts(t *testing.T) {
	f := New()
	m := NewMounts(f)
	if err := m.MountTmpfs("/v", 1); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("mount on a missing dir: %v", err)
	}
	_ = f.MkdirAll("/v")
	if err := m.MountTmpfs("/v", 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := f.CreateFile("/v/secret", []byte("x"), 0o400); err != nil {
		t.Fatal(err)
	}
	if size, ok := m.Size("/v/"); !ok || size != 1<<20 {
		t.Fatalf("Size = %d, %v", size, ok)
	}
	if err := m.Unmount("/v"); err != nil {
		t.Fatal(err)
	}
	if mnt, _ := m.IsMountPoint("/v"); mnt || f.Exists("/v/secret") {
		t.Errorf("after Unmount: mounted %v, content kept %v", mnt, f.Exists("/v/secret"))
	}
	if err := m.Unmount("/v"); err != nil {
		t.Errorf("unmounting twice: %v", err)
	}
}

// TestOwnershipAndModes: Lchown and Chmod are recorded (setgid on a
// directory included), follow a rename of the tree, and go with RemoveAll.
func TestOwnershipAndModes(t *testing.T) {
	f := New()
	_ = f.MkdirAll("/v/..1")
	if err := f.CreateFile("/v/..1/token", []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		f.Lchown("/v/..1/token", 1000, 2000), f.Chmod("/v/..1/token", 0o640),
		f.Lchown("/v/..1", -1, 2000), f.Chmod("/v/..1", 0o755|fs.ModeSetgid),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Lchown("/v/missing", 1, 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lchown of a missing path: %v", err)
	}
	if err := f.Rename("/v/..1", "/v/..2"); err != nil {
		t.Fatal(err)
	}
	if u, g, ok := f.Owner("/v/..2/token"); !ok || u != 1000 || g != 2000 {
		t.Errorf("token owner %d:%d (%v), want 1000:2000", u, g, ok)
	}
	if info, err := f.Stat("/v/..2/token"); err != nil || info.Mode() != 0o640 {
		t.Errorf("token mode %v, %v; want 0640", info.Mode(), err)
	}
	if info, err := f.Stat("/v/..2"); err != nil || info.Mode() != fs.ModeDir|fs.ModeSetgid|0o755 {
		t.Errorf("directory mode %v, %v; want dgrwxr-xr-x", info.Mode(), err)
	}
	_ = f.RemoveAll("/v")
	_ = f.MkdirAll("/v/..2")
	if _, g, _ := f.Owner("/v/..2"); g != 0 {
		t.Errorf("a new directory of a removed one's name keeps its group %d", g)
	}
}
