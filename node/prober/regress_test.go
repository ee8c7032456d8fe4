//go:build !regress_141473

package prober

import "testing"

// The normal build carries no re-created upstream bug.
func TestNoRegressionVariantInTheNormalBuild(t *testing.T) {
	if regress141473 {
		t.Fatal("a regression variant is compiled into the normal build")
	}
}
