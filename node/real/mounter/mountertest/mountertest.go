// Package mountertest helps tests that run a real lockstep daemon: its
// root directory is made a shared mount (a bind mount of itself) that the
// daemon, as the kubelet, never undoes.
package mountertest

import (
	"testing"

	"github.com/lockstep-dev/lockstep/node/real/mounter"
)

// TempDir is t.TempDir for a daemon's root directory (or a directory
// holding it): what is mounted at or below it is unmounted, deepest
// first, before the directory is removed.
func TempDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	// Cleanups run last registered first: this one before TempDir's.
	t.Cleanup(func() {
		if err := mounter.New().UnmountTree(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}
