//go:build !regress_teeth_memlimit

package stats

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoMemLimitTeethVariantInTheNormalBuild(t *testing.T) {
	if teethSpecMemoryLimit {
		t.Fatal("the deliberately broken build of teeth_memlimit_on.go is compiled into the normal build")
	}
}
