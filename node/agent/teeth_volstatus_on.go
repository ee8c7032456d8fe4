//go:build regress_teeth_volstatus

package agent

// statusAfterVolumes: see teeth_volstatus.go. This build is deliberately
// broken.
const statusAfterVolumes = true
