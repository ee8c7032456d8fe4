package main

import (
	"testing"

	"github.com/lockstep-dev/lockstep/node/real/mounter/mountertest"
)

// rootDir is a temporary root directory for a real daemon (see
// mountertest.TempDir: the daemon's shared bind mount is undone before
// the directory is removed).
func rootDir(t *testing.T) string {
	t.Helper()
	return mountertest.TempDir(t)
}
