//go:build !regress_teeth_sidecars

package runtimesync

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoSidecarsTeethVariantInTheNormalBuild(t *testing.T) {
	if sidecarWaitsPastGrace {
		t.Fatal("the deliberately broken build of teeth_sidecars.go is compiled into the normal build")
	}
}
