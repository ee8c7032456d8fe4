//go:build !regress_teeth_probekill

package runtimesync

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoProbeKillTeethVariantInTheNormalBuild(t *testing.T) {
	if probeKillWaitsForExit {
		t.Fatal("the deliberately broken build of teeth_probekill.go is compiled into the normal build")
	}
}
