//go:build regress_teeth_apparmor

package scenarios

import "testing"

// TestRegressionTeethAppArmor: with admission ignoring AppArmor
// (regress_teeth_apparmor), a pod asking for an AppArmor profile runs on
// the simulated host, which has none; the pod-refusals sweep must find it
// through apparmor-refused — which judges from the pod spec (its own
// model), the harness's machine fact and the runtime's sandboxes and
// containers.
func TestRegressionTeethAppArmor(t *testing.T) {
	testRegression(t, "pod-refusals", "apparmor-refused", 200)
}
