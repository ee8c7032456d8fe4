//go:build regress_prompt

package scenarios

import "testing"

// A lost wake-up in the status manager (node/status, regress_prompt.go): a
// new pod status waits for the next resync (10 s) or another pod's change
// before it is written. status-prompt catches it in the first seeds of
// termination (a pod's first start not in the API 2 s later).
func TestRegressionPrompt(t *testing.T) { testRegression(t, "termination", "status-prompt", 20) }
