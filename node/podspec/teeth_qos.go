//go:build !regress_teeth_qos

package podspec

// brokenQOS is false in every normal build. Built with the tag
// regress_teeth_qos (tests only; the daemon refuses a regress_ build) a
// resource requested without a limit counts as Guaranteed (as if no limit
// matched any request): a deliberately broken build that shows the
// simulation checker's QoS invariants (cgroups-match, qos-reported) have
// teeth now that they classify pods with their own model (see
// docs/checker.md).
const brokenQOS = false
