//go:build regress_teeth_propagation

package scenarios

import "testing"

// TestRegressionTeethPropagation: with the agent leaving its root
// directory private (regress_teeth_propagation), propagation-shared —
// which judges every container's Bidirectional and HostToContainer mounts
// against the mounts the simulated host made shared, not against the
// agent's view — catches the first such container created.
func TestRegressionTeethPropagation(t *testing.T) {
	testRegression(t, "volumes", "propagation-shared", 200)
}
