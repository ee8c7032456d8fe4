//go:build regress_teeth_grace

package scenarios

import "testing"

// TestRegressionTeethGrace: a deleted pod's containers given 3 s past the
// deletion's grace period (regress_teeth_grace) stayed within the 5 s
// slack grace-honoured used to allow; the tightened bound catches it.
func TestRegressionTeethGrace(t *testing.T) { testRegression(t, "termination", "grace-honoured", 60) }
