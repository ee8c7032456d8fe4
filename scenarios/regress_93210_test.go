//go:build regress_93210

package scenarios

import "testing"

// Upstream kubernetes#93210: a pod started and deleted quickly is killed
// without its grace period. termination finds it within 200 seeds: a
// container that stops 2 s after SIGTERM, with 10 s of grace, SIGKILLed
// (sigterm-first), or one whose preStop hook never ran because there was
// no grace to run it in (prestop-before-stop), whichever comes first.
func TestRegression93210(t *testing.T) {
	testRegression(t, "termination", "sigterm-first", 200, "prestop-before-stop")
}
