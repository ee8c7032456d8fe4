package dirwatch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// nextRemoved is Next bounded by a generous deadline, so a missed event
// fails the test instead of hanging it.
func nextRemoved(t *testing.T, w *Watcher, dir string) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.Next(ctx, dir)
}

func TestNextReportsEachKindOfChange(t *testing.T) {
	for _, change := range []struct {
		name    string
		do      func(file string) error
		removed []string
	}{
		{"create", func(file string) error { return os.WriteFile(file+".new", []byte("a"), 0o644) }, nil},
		{"write", func(file string) error { return os.WriteFile(file, []byte("b"), 0o644) }, nil},
		{"rename", func(file string) error { return os.Rename(file, file+".moved") }, []string{"etcd.yaml"}},
		{"remove", func(file string) error { return os.Remove(file) }, []string{"etcd.yaml"}},
	} {
		t.Run(change.name, func(t *testing.T) {
			// Each change on a watch of its own, started after the file
			// was made: no earlier event can answer for it.
			w, dir, file := watchedFile(t)
			if err := change.do(file); err != nil {
				t.Fatal(err)
			}
			removed, err := nextRemoved(t, w, dir)
			if err != nil {
				t.Errorf("%s not reported: %v", change.name, err)
			}
			if diff := cmp.Diff(change.removed, removed); diff != "" {
				t.Errorf("%s: removed entries (-want +got):\n%s", change.name, diff)
			}
		})
	}
}

// watchedFile makes a directory holding the file etcd.yaml and a watch of
// it, started after the file was made.
func watchedFile(t *testing.T) (w *Watcher, dir, file string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, "etcd.yaml")
	if err := os.WriteFile(file, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	w = New()
	t.Cleanup(func() { w.Close() })
	if _, err := w.watch(dir); err != nil {
		t.Fatal(err)
	}
	return w, dir, file
}

func TestNextOnAMissingDirectoryFails(t *testing.T) {
	w := New()
	defer w.Close()
	if _, err := w.Next(context.Background(), filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Fatal("Next on a missing directory did not fail")
	}
}

func TestNextEndsWithItsContext(t *testing.T) {
	w := New()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Next(ctx, t.TempDir()); err != context.Canceled {
		t.Fatalf("Next with a cancelled context: %v, want context.Canceled", err)
	}
}

// TestNextReportsARemovalWrittenBack: a manifest removed and written back
// before Next returns is reported removed (the kubelet's watch sees the
// deletion on its own), and only once; a plain write reports nothing
// removed.
func TestNextReportsARemovalWrittenBack(t *testing.T) {
	w, dir, file := watchedFile(t)
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The events may come in more than one Next: gather the removals
	// until the write back has been reported too (the file's content is
	// read by the caller, not here).
	var removed []string
	for len(removed) == 0 {
		got, err := nextRemoved(t, w, dir)
		if err != nil {
			t.Fatal(err)
		}
		removed = append(removed, got...)
	}
	if diff := cmp.Diff([]string{"etcd.yaml"}, removed); diff != "" {
		t.Errorf("removed entries (-want +got):\n%s", diff)
	}
	if err := os.WriteFile(file, []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := nextRemoved(t, w, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("a plain write reported %v removed", got)
	}
}
