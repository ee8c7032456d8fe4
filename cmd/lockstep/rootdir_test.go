package main

import (
	"testing"

	"github.com/lockstep-dev/lockstep/node/real/mounter"
)

// rootDir is a temporary root directory for a real daemon: the daemon
// makes it a shared mount (a bind mount of itself, when run as root) and,
// as the kubelet, never undoes it, so the test unmounts what is at or
// below it before the directory is removed.
func rootDir(t *testing.T) string {
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
