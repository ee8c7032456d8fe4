//go:build regress_teeth_latest

package scenarios

import "testing"

// TestRegressionTeethLatest: a mirror pod never replaced by the mirror of
// a newer manifest version (regress_teeth_latest) leaves an edited static
// pod's mirror at an old version; static-latest catches it.
func TestRegressionTeethLatest(t *testing.T) {
	testRegression(t, "static-pods", "static-latest", 60, "mirror-present")
}
