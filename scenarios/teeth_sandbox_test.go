//go:build regress_teeth_sandbox

package scenarios

import "testing"

// TestRegressionTeethSandbox: with the executor reporting a new sandbox
// ready before it runs it, failed or not (regress_teeth_sandbox),
// sandbox-reported — which judges the status against the sandboxes the
// runtime created, not against the agent's view — catches a pod said
// ready to start containers with no sandbox.
func TestRegressionTeethSandbox(t *testing.T) { testRegression(t, "mixed", "sandbox-reported", 200) }
