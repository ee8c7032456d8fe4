//go:build !regress_teeth_features

package admission

import "testing"

// The normal build carries no deliberately broken variant.
func TestNoFeaturesTeethVariantInTheNormalBuild(t *testing.T) {
	if ignoreDeclaredFeatures {
		t.Fatal("the deliberately broken build of teeth_features.go is compiled into the normal build")
	}
}
