//go:build !regress_firstwait

package backoff

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoRegressionVariantInTheNormalBuild(t *testing.T) {
	if regressFirstWait {
		t.Fatal("a regression variant is compiled into the normal build")
	}
}
