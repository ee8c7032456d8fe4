//go:build !regress_teeth_terminal

package status

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoTerminalTeethVariantInTheNormalBuild(t *testing.T) {
	if brokenShowsTerminalEarly {
		t.Fatal("the deliberately broken build of teeth_terminal.go is compiled into the normal build")
	}
}
