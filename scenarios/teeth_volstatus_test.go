//go:build regress_teeth_volstatus

package scenarios

import "testing"

// TestRegressionTeethVolStatus: with a sync that writes no status before
// it waits for the pod's volumes (regress_teeth_volstatus),
// volume-wait-status — which follows the pods whose volume source the API
// lacks, not what the agent decided — catches a pod left with no status.
func TestRegressionTeethVolStatus(t *testing.T) {
	testRegression(t, "volumes", "volume-wait-status", 100)
}
