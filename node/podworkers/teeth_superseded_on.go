//go:build regress_teeth_superseded

package podworkers

// brokenStartsSuperseded: see teeth_superseded.go. This build is
// deliberately broken.
const brokenStartsSuperseded = true
