//go:build !regress_teeth_apparmor

package admission

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoAppArmorTeethVariantInTheNormalBuild(t *testing.T) {
	if ignoreAppArmor {
		t.Fatal("the deliberately broken build of teeth_apparmor.go is compiled into the normal build")
	}
}
