//go:build !regress_teeth_fqdn

package podspec

// ignoreFQDNLimit is false in every normal build. Built with the tag
// regress_teeth_fqdn (tests only; the daemon refuses a regress_ build)
// a pod's FQDN becomes its hostname whatever its length: a deliberately
// broken build that shows the simulation checker's fqdn-too-long
// invariant has teeth (see docs/checker.md).
const ignoreFQDNLimit = false
