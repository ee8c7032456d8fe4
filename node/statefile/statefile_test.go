package statefile

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// A missing file reads as none; a write creates the directory, leaves no
// temporary file behind, and a second write replaces the first.
func TestReadWrite(t *testing.T) {
	files := memfs.New()
	const path = "/var/lib/lockstep/state/cpu_manager_state"
	if data, ok, err := Read(files, path); ok || err != nil || data != nil {
		t.Fatalf("Read of a missing file = %q, %v, %v; want nothing", data, ok, err)
	}
	for _, content := range []string{"first", "second"} {
		if err := Write(files, path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		data, ok, err := Read(files, path)
		if !ok || err != nil {
			t.Fatalf("Read after a write: %v, %v", ok, err)
		}
		if diff := cmp.Diff(content, string(data)); diff != "" {
			t.Errorf("content (-want +got):\n%s", diff)
		}
	}
	if _, err := files.Stat(path + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the temporary file is left: %v", err)
	}
}

// failingRename is a disk whose renames fail.
type failingRename struct{ *memfs.FS }

func (failingRename) Rename(from, to string) error { return errors.New("read-only file system") }

// A write whose rename fails names the checkpoint and keeps the old
// content.
func TestWriteFailureNamesThePath(t *testing.T) {
	files := memfs.New()
	if err := Write(files, "/state", []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Write(failingRename{files}, "/state", []byte("new"), 0o644)
	if err == nil || !strings.Contains(err.Error(), "write /state: read-only file system") {
		t.Errorf("Write with a failing rename = %v; want an error naming /state", err)
	}
	if data, _, _ := Read(files, "/state"); string(data) != "old" {
		t.Errorf("content after a failed write: %q, want the old one", data)
	}
}

// Sum32 depends on the content only, not on map order, and tells
// different contents apart.
func TestSum32(t *testing.T) {
	a := map[string]int{"x": 1, "y": 2, "z": 3}
	b := map[string]int{"z": 3, "y": 2, "x": 1}
	sa, err := Sum32(a)
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := Sum32(b)
	if sa != sb {
		t.Errorf("equal maps sum %d and %d", sa, sb)
	}
	if sc, _ := Sum32(map[string]int{"x": 1, "y": 2, "z": 4}); sc == sa {
		t.Errorf("different contents sum alike: %d", sa)
	}
	// FNV-1a 32 of `{}`.
	if s, _ := Sum32(struct{}{}); s != 0x5465b825 {
		t.Errorf("Sum32({}) = %#x", s)
	}
	if _, err := Sum32(func() {}); err == nil {
		t.Error("a value JSON cannot encode summed without an error")
	}
}

// mkdirCounter counts MkdirAll calls.
type mkdirCounter struct {
	*memfs.FS
	mkdirs int
}

func (m *mkdirCounter) MkdirAll(p string) error { m.mkdirs++; return m.FS.MkdirAll(p) }

// The directory is made by the first write only: later writes (one per
// pod admission for the allocation checkpoint) go straight to the file.
func TestWriteMakesTheDirectoryOnlyWhenMissing(t *testing.T) {
	files := &mkdirCounter{FS: memfs.New()}
	for i := range 3 {
		if err := Write(files, "/var/lib/lockstep/allocated_pods_state", []byte{byte('a' + i)}, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if files.mkdirs != 1 {
		t.Errorf("%d MkdirAll calls for 3 writes, want 1", files.mkdirs)
	}
}
