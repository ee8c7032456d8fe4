package dirwatch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// next is Next bounded by a generous deadline, so a missed event fails
// the test instead of hanging it.
func next(t *testing.T, w *Watcher, dir string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.Next(ctx, dir)
}

func TestNextReportsEachKindOfChange(t *testing.T) {
	for _, change := range []struct {
		name string
		do   func(file string) error
	}{
		{"create", func(file string) error { return os.WriteFile(file+".new", []byte("a"), 0o644) }},
		{"write", func(file string) error { return os.WriteFile(file, []byte("b"), 0o644) }},
		{"rename", func(file string) error { return os.Rename(file, file+".moved") }},
		{"remove", func(file string) error { return os.Remove(file) }},
	} {
		t.Run(change.name, func(t *testing.T) {
			// Each change on a watch of its own, started after the file
			// was made: no earlier event can answer for it.
			dir := t.TempDir()
			file := filepath.Join(dir, "etcd.yaml")
			if err := os.WriteFile(file, []byte("a"), 0o644); err != nil {
				t.Fatal(err)
			}
			w := New()
			defer w.Close()
			if _, err := w.watch(dir); err != nil {
				t.Fatal(err)
			}
			if err := change.do(file); err != nil {
				t.Fatal(err)
			}
			if err := next(t, w, dir); err != nil {
				t.Errorf("%s not reported: %v", change.name, err)
			}
		})
	}
}

func TestNextOnAMissingDirectoryFails(t *testing.T) {
	w := New()
	defer w.Close()
	if err := w.Next(context.Background(), filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Fatal("Next on a missing directory did not fail")
	}
}

func TestNextEndsWithItsContext(t *testing.T) {
	w := New()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Next(ctx, t.TempDir()); err != context.Canceled {
		t.Fatalf("Next with a cancelled context: %v, want context.Canceled", err)
	}
}
