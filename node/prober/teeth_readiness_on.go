//go:build regress_teeth_readiness

package prober

// readinessWaitsForTick: see teeth_readiness.go. This build is
// deliberately broken.
const readinessWaitsForTick = true
