//go:build regress_teeth_probekill

package runtimesync

// probeKillWaitsForExit: see teeth_probekill.go. This build is
// deliberately broken.
const probeKillWaitsForExit = true
