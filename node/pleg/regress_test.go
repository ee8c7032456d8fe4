//go:build !regress_94829

package pleg

import "testing"

// The normal build carries no re-created upstream bug.
func TestNoRegressionVariantInTheNormalBuild(t *testing.T) {
	if regress94829 {
		t.Fatal("a regression variant is compiled into the normal build")
	}
}
