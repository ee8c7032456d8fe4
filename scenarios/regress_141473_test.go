//go:build regress_141473

package scenarios

import "testing"

// Upstream kubernetes#141473: the readiness of a container's previous
// instance is carried to its replacement. probe-failure finds it (a
// replacement reported ready before its readiness endpoint ever answered
// healthy: fresh-probe-results) within 50 seeds (10 today, shrunk to one
// create-probed action).
func TestRegression141473(t *testing.T) {
	testRegression(t, "probe-failure", "fresh-probe-results", 50)
}
