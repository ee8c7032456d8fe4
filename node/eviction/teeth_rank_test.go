//go:build !regress_teeth_rank

package eviction

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoTeethVariantInTheNormalBuild(t *testing.T) {
	if brokenRank {
		t.Fatal("the deliberately broken build of teeth_rank.go is compiled into the normal build")
	}
}
