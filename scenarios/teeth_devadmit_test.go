//go:build regress_teeth_devadmit

package scenarios

import "testing"

// TestRegressionTeethDevAdmit: with admission blind to the Node's own
// extended resources (regress_teeth_devadmit, lockstep's old behaviour),
// a restarted agent that forgot a device plugin removed past its grace
// admits a pod asking for its devices and runs it without them;
// devices-once — which judges from the plugin's own allocations and the
// resources the Node had shown when the pod was created — catches it.
func TestRegressionTeethDevAdmit(t *testing.T) {
	testRegression(t, "device-faults", "devices-once", 100)
}
