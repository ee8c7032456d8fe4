package memfs

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadDirAndFiles(t *testing.T) {
	f := New()
	f.WriteFile("/etc/m/b.yaml", []byte("b"))
	f.WriteFile("/etc/m/a.yaml", []byte("aa"))
	f.WriteFile("/etc/m/sub/c.yaml", []byte("c"))
	f.MkdirAll("/etc/m/empty")
	ents, err := f.ReadDir("/etc/m")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name()+map[bool]string{true: "/", false: ""}[e.IsDir()])
	}
	if diff := cmp.Diff([]string{"a.yaml", "b.yaml", "empty/", "sub/"}, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	data, err := f.ReadFile("/etc/m/a.yaml")
	if err != nil || string(data) != "aa" {
		t.Errorf("ReadFile = %q, %v", data, err)
	}
	data[0] = 'x'
	if again, _ := f.ReadFile("/etc/m/a.yaml"); string(again) != "aa" {
		t.Errorf("ReadFile shares memory with the tree")
	}
	if err := f.Remove("/etc/m/a.yaml"); err != nil {
		t.Errorf("Remove: %v", err)
	}
	if err := f.Remove("/etc/m/a.yaml"); err != nil {
		t.Errorf("Remove of a missing file: %v", err)
	}
	if _, err := f.ReadFile("/etc/m/a.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("removed file: %v, want ErrNotExist", err)
	}
	if _, err := f.ReadDir("/nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: %v, want ErrNotExist", err)
	}
}

func TestSymlinkAndRemoveAll(t *testing.T) {
	f := New()
	f.WriteFile("/var/log/pods/ns_p_u/app/0.log", []byte("hi"))
	if err := f.Symlink("/var/log/pods/ns_p_u/app/0.log", "/var/log/containers/p_ns_app-id.log"); err == nil {
		t.Errorf("Symlink in a missing directory succeeded")
	}
	if err := f.MkdirAll("/var/log/containers"); err != nil {
		t.Fatal(err)
	}
	link := "/var/log/containers/p_ns_app-id.log"
	if err := f.Symlink("/var/log/pods/ns_p_u/app/0.log", link); err != nil {
		t.Fatal(err)
	}
	if err := f.Symlink("/x", link); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Symlink: %v, want ErrExist", err)
	}
	if data, err := f.ReadFile(link); err != nil || string(data) != "hi" {
		t.Errorf("ReadFile through the link = %q, %v", data, err)
	}
	entries, err := f.ReadDir("/var/log/containers")
	if err != nil || len(entries) != 1 || entries[0].Type() != fs.ModeSymlink {
		t.Errorf("ReadDir of the links = %v, %v", entries, err)
	}
	if err := f.RemoveAll("/var/log/pods/ns_p_u"); err != nil {
		t.Fatal(err)
	}
	if f.Exists(link) || f.Exists("/var/log/pods/ns_p_u/app/0.log") {
		t.Errorf("the log survived RemoveAll")
	}
	if _, err := f.ReadDir("/var/log/pods/ns_p_u"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the directory survived RemoveAll: %v", err)
	}
	if target, err := f.Readlink(link); err != nil || target != "/var/log/pods/ns_p_u/app/0.log" {
		t.Errorf("Readlink = %q, %v (a dangling link stays)", target, err)
	}
	if err := f.Remove(link); err != nil || f.Exists(link) {
		t.Errorf("Remove of the link: %v", err)
	}
	if _, err := f.Readlink(link); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Readlink after Remove: %v", err)
	}
}

// TestReadlinkFollowsLeadingLinks: as readlink(2), links among the
// components before the last are followed; the last is read, not
// followed.
func TestReadlinkFollowsLeadingLinks(t *testing.T) {
	f := New()
	_ = f.MkdirAll("/pv/real")
	_ = f.MkdirAll("/pods/u/volumes")
	if err := f.Symlink("/pv", "/pods/u/volumes/claim"); err != nil {
		t.Fatal(err)
	}
	if err := f.Symlink("/pv/real", "/pv/sub"); err != nil {
		t.Fatal(err)
	}
	for link, want := range map[string]string{"/pods/u/volumes/claim": "/pv", "/pods/u/volumes/claim/sub": "/pv/real", "/pv/sub": "/pv/real"} {
		if got, err := f.Readlink(link); err != nil || got != want {
			t.Errorf("Readlink(%s) = %q, %v; want %q", link, got, err, want)
		}
	}
	if _, err := f.Readlink("/pods/u/volumes/claim/real"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Readlink of a directory through a link: %v, want ErrNotExist", err)
	}
}

func TestTreeUsage(t *testing.T) {
	f := New()
	f.WriteFile("/v/a/x", make([]byte, 10))
	f.WriteFile("/v/a/sub/y", make([]byte, 5))
	f.WriteFile("/v/b/z", make([]byte, 100))
	if err := f.Symlink("x", "/v/a/l"); err != nil {
		t.Fatal(err)
	}
	bytes, inodes, err := f.TreeUsage("/v/a")
	if err != nil || bytes != 15 || inodes != 5 { // a, x, sub, y, l
		t.Errorf("TreeUsage(/v/a) = %d bytes, %d inodes, %v; want 15, 5, nil", bytes, inodes, err)
	}
	if _, _, err := f.TreeUsage("/v/c"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("TreeUsage of a missing dir: %v", err)
	}
}

// TestGenerationMovesWithEveryChange checks that every kind of change
// moves the generation and that reads leave it alone.
func TestGenerationMovesWithEveryChange(t *testing.T) {
	f := New()
	changes := []struct {
		name string
		do   func() error
	}{
		{"MkdirAll", func() error { return f.MkdirAll("/a/b") }},
		{"WriteFile", func() error { f.WriteFile("/a/b/f", []byte("x")); return nil }},
		{"AppendFile", func() error { return f.AppendFile("/a/b/f", []byte("y")) }},
		{"CreateFile", func() error { return f.CreateFile("/a/b/g", []byte("z"), 0o644) }},
		{"Rename", func() error { return f.Rename("/a/b/g", "/a/b/h") }},
		{"Chmod", func() error { return f.Chmod("/a/b/h", 0o600) }},
		{"Lchown", func() error { return f.Lchown("/a/b/h", 1, 1) }},
		{"Symlink", func() error { return f.Symlink("/a/b/h", "/a/l") }},
		{"Remove", func() error { return f.Remove("/a/l") }},
		{"RemoveAll", func() error { return f.RemoveAll("/a") }},
	}
	for _, ch := range changes {
		before := f.Generation()
		if err := ch.do(); err != nil {
			t.Fatalf("%s: %v", ch.name, err)
		}
		if f.Generation() == before {
			t.Errorf("%s left the generation at %d", ch.name, before)
		}
		g := f.Generation()
		f.Exists("/a/b/f")
		_, _ = f.ReadFile("/a/b/f")
		_, _, _ = f.TreeUsage("/")
		if f.Generation() != g {
			t.Errorf("reads after %s moved the generation", ch.name)
		}
	}
}

func TestOnChangeReportsEveryChangedEntry(t *testing.T) {
	f := New()
	var got, gone []string
	cancel := f.OnChange(func(name string, g bool) {
		got = append(got, name)
		if g {
			gone = append(gone, name)
		}
	})
	f.WriteFile("/m/a.yaml", []byte("a"))
	_ = f.AppendFile("/m/a/0.log", []byte("x"))
	_ = f.CreateFile("/m/b.yaml", []byte("b"), 0o644)
	_ = f.Rename("/m/b.yaml", "/m/c.yaml")
	_ = f.Symlink("/m/c.yaml", "/m/d.yaml")
	_ = f.Remove("/m/d.yaml")
	_ = f.RemoveAll("/m/a")
	_ = f.MkdirAll("/m/e") // a new empty directory is not reported
	cancel()
	f.WriteFile("/m/after.yaml", nil)
	want := []string{"/m/a.yaml", "/m/a/0.log", "/m/b.yaml", "/m/b.yaml", "/m/c.yaml", "/m/d.yaml", "/m/d.yaml", "/m/a"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes reported (-want +got):\n%s", diff)
	}
	// Gone: the renamed-away name, the removed link and the removed tree.
	if diff := cmp.Diff([]string{"/m/b.yaml", "/m/d.yaml", "/m/a"}, gone); diff != "" {
		t.Errorf("entries reported gone (-want +got):\n%s", diff)
	}
}
