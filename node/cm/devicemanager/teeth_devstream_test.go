//go:build !regress_teeth_devstream

package devicemanager

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoTeethVariantInTheNormalBuild(t *testing.T) {
	if teethRelistAfterStreamEnd {
		t.Fatal("the deliberately broken build of teeth_devstream.go is compiled into the normal build")
	}
}
