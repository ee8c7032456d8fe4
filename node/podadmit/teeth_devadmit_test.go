//go:build !regress_teeth_devadmit

package podadmit

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoTeethVariantInTheNormalBuild(t *testing.T) {
	if teethNodeExtendedIgnored {
		t.Fatal("the deliberately broken build of teeth_devadmit.go is compiled into the normal build")
	}
}
