//go:build regress_teeth_terminal

package scenarios

import "testing"

// TestRegressionTeethTerminal: with a terminal phase written while the
// pod's containers still run (regress_teeth_terminal), terminal-after-
// stopped — which judges from the runtime's instances, not the agent's
// worker state — catches a Job-like pod shown terminal before its
// sidecars stopped.
func TestRegressionTeethTerminal(t *testing.T) {
	testRegression(t, "termination", "terminal-after-stopped", 100)
}
