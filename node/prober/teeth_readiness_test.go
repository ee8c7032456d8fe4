//go:build !regress_teeth_readiness

package prober

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoReadinessTeethVariantInTheNormalBuild(t *testing.T) {
	if readinessWaitsForTick {
		t.Fatal("the deliberately broken build of teeth_readiness.go is compiled into the normal build")
	}
}
