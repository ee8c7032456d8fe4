//go:build regress_teeth_readiness

package scenarios

import "testing"

// TestRegressionTeethReadiness: with a started instance's readiness left
// to its worker's next tick (regress_teeth_readiness),
// readiness-at-once — which reads the probe's spec and the fake runtime's
// endpoint scripts, not the prober — catches a probed pod written ready a
// readiness period after it was written started.
func TestRegressionTeethReadiness(t *testing.T) {
	testRegression(t, "probe-failure", "readiness-at-once", 200)
}
