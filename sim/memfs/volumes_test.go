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
