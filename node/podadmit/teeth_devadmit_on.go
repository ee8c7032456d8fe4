//go:build regress_teeth_devadmit

package podadmit

// teethNodeExtendedIgnored: see teeth_devadmit.go. This build is
// deliberately broken.
const teethNodeExtendedIgnored = true
