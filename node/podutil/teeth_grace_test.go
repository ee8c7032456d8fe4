//go:build !regress_teeth_grace

package podutil

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoTeethVariantInTheNormalBuild(t *testing.T) {
	if brokenGraceSeconds != 0 {
		t.Fatal("the deliberately broken build of teeth_grace.go is compiled into the normal build")
	}
}
