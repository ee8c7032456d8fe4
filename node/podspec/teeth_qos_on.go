//go:build regress_teeth_qos

package podspec

// brokenQOS: see teeth_qos.go. This build is deliberately broken.
const brokenQOS = true
