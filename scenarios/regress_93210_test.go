//go:build regress_93210

package scenarios

import "testing"

// Upstream kubernetes#93210: a pod started and deleted quickly is killed
// without its grace period. termination finds it (a container that stops
// 2 s after SIGTERM, with 10 s of grace, SIGKILLed; or, since pods with
// preStop hooks joined, one stopped without its hook) within 1500 seeds.
func TestRegression93210(t *testing.T) {
	testRegression(t, "termination", "sigterm-first", 1500, "prestop-before-stop")
}
