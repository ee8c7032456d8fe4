//go:build regress_teeth_sidecars

package scenarios

import "testing"

// TestRegressionTeethSidecars: with a sidecar whose preStop hook used up
// the grace period still waiting for its turn (regress_teeth_sidecars),
// sidecars-stop-together — which derives the bound from the deletion's
// grace and the runtime's own hook and stop times, not the agent's order —
// catches the sidecars of the termination scenario's hung-hook pod asked
// to stop one after another past the grace.
func TestRegressionTeethSidecars(t *testing.T) {
	testRegression(t, "termination", "sidecars-stop-together", 200)
}
