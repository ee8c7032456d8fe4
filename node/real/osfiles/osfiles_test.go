package osfiles

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadDirSortedWithTypes(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"c.yaml", "a.yaml", "b.json"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := New().ReadDir(dir)
	if err != nil {
		t.Fatalf("ReadDir: %v", err)
	}
	var got []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		got = append(got, name)
	}
	if d := cmp.Diff([]string{"a.yaml", "b.json", "c.yaml", "sub/"}, got); d != "" {
		t.Errorf("entries (-want +got):\n%s", d)
	}
	if _, err := New().ReadDir(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadDir of a missing dir: err = %v, want fs.ErrNotExist", err)
	}
}

func TestReadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(p, []byte("kind: Pod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := New().ReadFile(p)
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	if string(got) != "kind: Pod\n" {
		t.Errorf("content = %q, want %q", got, "kind: Pod\n")
	}
	if _, err := New().ReadFile(p + ".gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: err = %v, want fs.ErrNotExist", err)
	}
}

func TestReadFileTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "termination-log")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	for max, want := range map[int64]string{4: "6789", 10: "0123456789", 100: "0123456789", 0: ""} {
		got, err := New().ReadFileTail(p, max)
		if err != nil || string(got) != want {
			t.Errorf("ReadFileTail(%d) = %q, %v; want %q", max, got, err, want)
		}
	}
	if _, err := New().ReadFileTail(p+".gone", 4); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFileTail of a missing file: err = %v, want fs.ErrNotExist", err)
	}
}

func TestMkdirAll(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := filepath.Join(t.TempDir(), "pods", "uid", "c")
	f := New()
	if err := f.MkdirAll(dir); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	if err := f.MkdirAll(dir); err != nil {
		t.Fatalf("MkdirAll of an existing dir: %v", err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if !st.IsDir() || st.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v, want a directory with 0755", d, st.Mode())
		}
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.MkdirAll(filepath.Join(file, "sub")); err == nil {
		t.Error("MkdirAll under a regular file succeeded")
	}
}

func TestSymlinkAndRemove(t *testing.T) {
	dir := t.TempDir()
	f := New()
	target, link := filepath.Join(dir, "pods", "0.log"), filepath.Join(dir, "containers", "c.log")
	for _, d := range []string{filepath.Dir(target), filepath.Dir(link)} {
		if err := f.MkdirAll(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(target, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Symlink(target, link); err != nil {
		t.Fatalf("Symlink: %v", err)
	}
	if err := f.Symlink(target, link); err == nil {
		t.Error("Symlink over an existing link succeeded")
	}
	if got, err := f.ReadFile(link); err != nil || string(got) != "hello\n" {
		t.Errorf("ReadFile through the link = %q, %v", got, err)
	}
	if err := f.Remove(link); err != nil {
		t.Fatalf("Remove of the link: %v", err)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("removing the link removed its target: %v", err)
	}
	if err := f.Remove(link); err != nil {
		t.Errorf("Remove of a missing path: %v", err)
	}
	if err := f.RemoveAll(filepath.Join(dir, "pods")); err != nil {
		t.Fatalf("RemoveAll: %v", err)
	}
	if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after RemoveAll the log still exists: %v", err)
	}
	if err := f.RemoveAll(filepath.Join(dir, "pods")); err != nil {
		t.Errorf("RemoveAll of a missing path: %v", err)
	}
}

// TestAtomicLinkSwap: the operations the volume writer publishes with:
// a file created with an exact mode, a link renamed over another one,
// Stat through links and Readlink.
func TestAtomicLinkSwap(t *testing.T) {
	dir, f := t.TempDir(), New()
	for _, ts := range []string{"..1", "..2"} {
		if err := f.MkdirAll(filepath.Join(dir, ts)); err != nil {
			t.Fatal(err)
		}
		if err := f.CreateFile(filepath.Join(dir, ts, "key"), []byte(ts), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Symlink("..1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := f.Symlink("..data/key", filepath.Join(dir, "key")); err != nil {
		t.Fatal(err)
	}
	if err := f.Symlink("..2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := f.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	data, err := f.ReadFile(filepath.Join(dir, "key"))
	if err != nil || string(data) != "..2" {
		t.Fatalf("key = %q, %v; want the new content", data, err)
	}
	info, err := f.Stat(filepath.Join(dir, "key"))
	if err != nil || info.Mode().Perm() != 0o400 || !info.Mode().IsRegular() {
		t.Fatalf("Stat(key) = %v, %v; want a regular file of mode 0400", info, err)
	}
	if target, err := f.Readlink(filepath.Join(dir, "..data")); err != nil || target != "..2" {
		t.Fatalf("Readlink(..data) = %q, %v", target, err)
	}
}

// TestChmodSetgid: Chmod sets the setgid bit of a directory, Lchown with
// -1 leaves the owner as it is.
func TestChmodSetgid(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v")
	fsys := New()
	if err := fsys.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Chmod(dir, 0o770|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Lchown(dir, -1, -1); err != nil {
		t.Fatal(err)
	}
	info, err := fsys.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode() & (fs.ModePerm | fs.ModeSetgid); got != 0o770|fs.ModeSetgid {
		t.Errorf("mode %v, want 0770 with setgid", got)
	}
}
