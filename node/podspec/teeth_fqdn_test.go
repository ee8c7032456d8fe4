//go:build !regress_teeth_fqdn

package podspec

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoFQDNTeethVariantInTheNormalBuild(t *testing.T) {
	if ignoreFQDNLimit {
		t.Fatal("the deliberately broken build of teeth_fqdn.go is compiled into the normal build")
	}
}
