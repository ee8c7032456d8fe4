//go:build !regress_93210 && !regress_104648

package podworkers

import "testing"

// The normal build carries no re-created upstream bug.
func TestNoRegressionVariantInTheNormalBuild(t *testing.T) {
	if regress93210 || regress104648 {
		t.Fatal("a regression variant is compiled into the normal build")
	}
}
