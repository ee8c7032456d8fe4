//go:build regress_teeth_propagation

package podspec

// unprivilegedBidirectional: see teeth_propagation.go. This build is
// deliberately broken.
const unprivilegedBidirectional = true
