package runtimesync

import (
	"testing"

	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// TestScopedJoinStaysInTheVolume: links a container wrote into a volume
// (absolute, or climbing with "..") are followed as if the volume were
// the root: the env file read never leaves it.
func TestScopedJoinStaysInTheVolume(t *testing.T) {
	files := memfs.New()
	const vol = "/pods/u/volumes/kubernetes.io~empty-dir/config"
	if err := files.MkdirAll(vol + "/sub"); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"abs":      "/etc/shadow",
		"up":       "../../../../../etc/shadow",
		"sub/next": "../plain",
		"loop":     "loop",
	} {
		if err := files.Symlink(target, vol+"/"+link); err != nil {
			t.Fatal(err)
		}
	}
	e := &Executor{ports: Ports{Files: files}}
	for sub, want := range map[string]string{
		"plain":    vol + "/plain",
		"abs":      vol + "/etc/shadow",
		"up":       vol + "/etc/shadow",
		"sub/next": vol + "/plain",
		"sub/../x": vol + "/x",
	} {
		if got, err := e.scopedJoin(vol, sub); err != nil || got != want {
			t.Errorf("scopedJoin(%q) = %q, %v; want %q", sub, got, err, want)
		}
	}
	if _, err := e.scopedJoin(vol, "loop"); err == nil {
		t.Errorf("a link to itself resolved")
	}
}
