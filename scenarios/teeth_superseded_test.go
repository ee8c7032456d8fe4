//go:build regress_teeth_superseded

package scenarios

import "testing"

// TestRegressionTeethSuperseded: with the kill of a static pod still
// waiting for its turn lost (regress_teeth_superseded), a version edited
// over before it started runs once the one before it has stopped;
// static-superseded-never-starts — which judges from the manifests the
// scenario wrote and the runtime's sandboxes, not the agent's queue —
// catches it.
func TestRegressionTeethSuperseded(t *testing.T) {
	testRegression(t, "static-pods", "static-superseded-never-starts", 100)
}
