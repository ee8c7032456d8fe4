//go:build !regress_teeth_readd

package podsource

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoReaddTeethVariantInTheNormalBuild(t *testing.T) {
	if brokenIgnoresRemovals {
		t.Fatal("the deliberately broken build of teeth_readd.go is compiled into the normal build")
	}
}
