//go:build !regress_teeth_latest

package agent

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoLatestTeethVariantInTheNormalBuild(t *testing.T) {
	if brokenKeepsStaleMirror {
		t.Fatal("the deliberately broken build of teeth_latest.go is compiled into the normal build")
	}
}
