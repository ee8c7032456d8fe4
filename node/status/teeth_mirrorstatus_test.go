//go:build !regress_teeth_mirrorstatus

package status

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoMirrorStatusTeethVariantInTheNormalBuild(t *testing.T) {
	if brokenWritesSupersededStatic {
		t.Fatal("the deliberately broken build of teeth_mirrorstatus.go is compiled into the normal build")
	}
}
