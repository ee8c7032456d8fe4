//go:build !regress_teeth_superseded

package podworkers

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoSupersededTeethVariantInTheNormalBuild(t *testing.T) {
	if brokenStartsSuperseded {
		t.Fatal("the deliberately broken build of teeth_superseded.go is compiled into the normal build")
	}
}
