//go:build regress_teeth_memlimit

package scenarios

import "testing"

// TestRegressionTeethMemLimit: with a container's memory limit taken
// from its spec rather than its cgroup (regress_teeth_memlimit),
// stats-memory-limit — which judges from the limit the simulated kernel
// holds, the runtime's limit rounded down to a page — catches the
// Summary's available memory of an 80M container.
func TestRegressionTeethMemLimit(t *testing.T) {
	testRegression(t, "stats", "stats-memory-limit", 30)
}
