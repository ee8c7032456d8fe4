//go:build !regress_106734 && !regress_121003

package agent

import "testing"

// The normal build carries no re-created upstream bug.
func TestNoRegressionVariantInTheNormalBuild(t *testing.T) {
	if regress106734 || regress121003 {
		t.Fatal("a regression variant is compiled into the normal build")
	}
}
