//go:build regress_teeth_qos

package scenarios

import "testing"

// TestRegressionTeethQOS: with requests without limits counted Guaranteed
// (regress_teeth_qos), the checker's own QoS class catches the pod the
// agent (and the simulated apiserver, which asks the agent's rule) files
// in the wrong class: qos-reported, or cgroups-match for the pod's cgroup.
func TestRegressionTeethQOS(t *testing.T) {
	testRegression(t, "cgroups", "qos-reported", 20, "cgroups-match")
}
