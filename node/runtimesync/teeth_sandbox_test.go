//go:build !regress_teeth_sandbox

package runtimesync

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoSandboxTeethVariantInTheNormalBuild(t *testing.T) {
	if earlySandboxReady {
		t.Fatal("the deliberately broken build of teeth_sandbox.go is compiled into the normal build")
	}
}
