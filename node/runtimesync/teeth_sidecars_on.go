//go:build regress_teeth_sidecars

package runtimesync

// sidecarWaitsPastGrace: see teeth_sidecars.go. This build is
// deliberately broken.
const sidecarWaitsPastGrace = true
