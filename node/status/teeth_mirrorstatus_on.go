//go:build regress_teeth_mirrorstatus

package status

// brokenWritesSupersededStatic: see teeth_mirrorstatus.go. This build is
// deliberately broken.
const brokenWritesSupersededStatic = true
