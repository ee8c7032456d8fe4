//go:build !regress_teeth_qos

package podspec

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoTeethVariantInTheNormalBuild(t *testing.T) {
	if brokenQOS {
		t.Fatal("the deliberately broken build of teeth_qos.go is compiled into the normal build")
	}
}
