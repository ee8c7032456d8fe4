package memcg

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// On a cgroup v1 host (as root), a process that grows its cgroup's usage
// past the threshold fires the notifier; nothing fires before.
func TestNotifierFiresOnACrossing(t *testing.T) {
	root := "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(root, "cgroup.event_control")); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and a cgroup v1 memory hierarchy at " + root)
	}
	dir := filepath.Join(root, fmt.Sprintf("lockstep-memcg-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	n, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.SetThreshold(4 << 20); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	if err := n.Next(ctx); err == nil {
		t.Fatal("fired with the cgroup empty")
	}
	cancel()
	shm := filepath.Join(t.TempDir(), "fill")
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		shm = fmt.Sprintf("/dev/shm/lockstep-memcg-test-%d", os.Getpid())
	}
	t.Cleanup(func() { os.Remove(shm) })
	// The shell joins the cgroup, then writes 16Mi of pages charged to it.
	cmd := exec.Command("sh", "-c", fmt.Sprintf("echo $$ > %s/cgroup.procs && head -c 16777216 /dev/zero > %s", dir, shm))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fill: %v: %s", err, out)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.Next(ctx); err != nil {
		t.Fatalf("no crossing reported after 16Mi was charged: %v", err)
	}
	os.Remove(shm)
}

func TestNewRefusesANonV1Dir(t *testing.T) {
	if _, err := New(t.TempDir()); err == nil {
		t.Error("New accepted a directory that is no memory cgroup")
	}
}
