//go:build regress_teeth_prestop

package lifecycle

// preStopCutAtGrace: see teeth_prestop.go. This build is deliberately
// broken.
const preStopCutAtGrace = true
