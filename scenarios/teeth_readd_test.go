//go:build regress_teeth_readd

package scenarios

import "testing"

// TestRegressionTeethReadd: a file source that ignores the removals its
// watch saw (regress_teeth_readd) keeps a static pod running when its
// manifest is removed and written back at once; static-removal-stops
// catches it.
func TestRegressionTeethReadd(t *testing.T) {
	testRegression(t, "static-pods", "static-removal-stops", 60)
}
