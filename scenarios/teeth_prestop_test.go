//go:build regress_teeth_prestop

package scenarios

import "testing"

// TestRegressionTeethPreStop: with a preStop hook that outlives its grace
// period cut there (regress_teeth_prestop), prestop-abandoned-runs-on —
// which reads how the fake runtime's exec ended, not the agent's decision
// — catches the termination scenario's hung hooks cut while their
// containers still ran.
func TestRegressionTeethPreStop(t *testing.T) {
	testRegression(t, "termination", "prestop-abandoned-runs-on", 200)
}
