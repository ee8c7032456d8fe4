//go:build regress_teeth_devstream

package devicemanager

// teethRelistAfterStreamEnd: see teeth_devstream.go. This build is
// deliberately broken.
const teethRelistAfterStreamEnd = true
