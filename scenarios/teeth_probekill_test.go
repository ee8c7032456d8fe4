//go:build regress_teeth_probekill

package scenarios

import "testing"

// TestRegressionTeethProbeKill: with a container killed for its probe
// under restartPolicy OnFailure left to restart by its exit code
// (regress_teeth_probekill), probe-restarts — which judges from the pod's
// policy and the runtime's instances, not the agent's decision — catches
// one that exited 0 on SIGTERM and was never started again.
func TestRegressionTeethProbeKill(t *testing.T) {
	testRegression(t, "probe-failure", "probe-restarts", 200)
}
