//go:build regress_teeth_features

package admission

// ignoreDeclaredFeatures: see teeth_features.go. This build is
// deliberately broken.
const ignoreDeclaredFeatures = true
