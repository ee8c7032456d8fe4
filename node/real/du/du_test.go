package du

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestDirUsageCountsBlocksAndInodes(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "a"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// A hard link to the same file is counted once.
	if err := os.Link(filepath.Join(dir, "sub", "a"), filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	u, err := New().DirUsage(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if u.Bytes < 1<<20 || u.Bytes > 1<<20+64<<10 {
		t.Errorf("Bytes = %d, want about 1Mi (one copy of the file plus the directories)", u.Bytes)
	}
	if u.Inodes != 3 { // dir, sub, a (b is a's inode)
		t.Errorf("Inodes = %d, want 3", u.Inodes)
	}
}

func TestDirUsageMissing(t *testing.T) {
	_, err := New().DirUsage(context.Background(), filepath.Join(t.TempDir(), "nope"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
}
