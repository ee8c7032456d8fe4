//go:build !regress_teeth_prestop

package lifecycle

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoPreStopTeethVariantInTheNormalBuild(t *testing.T) {
	if preStopCutAtGrace {
		t.Fatal("the deliberately broken build of teeth_prestop.go is compiled into the normal build")
	}
}
