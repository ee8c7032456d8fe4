//go:build regress_teeth_fqdn

package podspec

// ignoreFQDNLimit: see teeth_fqdn.go. This build is deliberately broken.
const ignoreFQDNLimit = true
