//go:build regress_teeth_devstream

package scenarios

import "testing"

// TestRegressionTeethDevStream: with a device manager that keeps a
// plugin's devices when its ListAndWatch stream ends and listens to it
// again (regress_teeth_devstream), device-plugin-down — which judges from
// the plugin's own calls and state and upstream's rules, not the agent's
// manager — catches the second ListAndWatch or the allocatable left up.
func TestRegressionTeethDevStream(t *testing.T) {
	testRegression(t, "device-faults", "device-plugin-down", 100)
}
