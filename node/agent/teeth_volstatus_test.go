//go:build !regress_teeth_volstatus

package agent

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoVolStatusTeethVariantInTheNormalBuild(t *testing.T) {
	if statusAfterVolumes {
		t.Fatal("the deliberately broken build of teeth_volstatus.go is compiled into the normal build")
	}
}
