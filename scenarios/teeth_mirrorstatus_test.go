//go:build regress_teeth_mirrorstatus

package scenarios

import "testing"

// TestRegressionTeethMirrorStatus: with the status of a static pod no
// longer desired still written to the mirror pod carrying its hash
// (regress_teeth_mirrorstatus), mirror-follows-current — which judges
// from the manifests the scenario wrote and the versions the agent's
// mirror writes carry — catches the superseded version's status.
func TestRegressionTeethMirrorStatus(t *testing.T) {
	testRegression(t, "static-pods", "mirror-follows-current", 100)
}
