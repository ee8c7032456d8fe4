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
	if !f.Remove("/etc/m/a.yaml") || f.Remove("/etc/m/a.yaml") {
		t.Errorf("Remove did not report existence right")
	}
	if _, err := f.ReadFile("/etc/m/a.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("removed file: %v, want ErrNotExist", err)
	}
	if _, err := f.ReadDir("/nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: %v, want ErrNotExist", err)
	}
}
