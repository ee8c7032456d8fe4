//go:build !regress_teeth_propagation

package podspec

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoPropagationTeethVariantInTheNormalBuild(t *testing.T) {
	if unprivilegedBidirectional {
		t.Fatal("the deliberately broken build of teeth_propagation.go is compiled into the normal build")
	}
}
