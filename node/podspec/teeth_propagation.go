//go:build !regress_teeth_propagation

package podspec

// unprivilegedBidirectional is false in every normal build. Built with
// the tag regress_teeth_propagation (tests only; the daemon refuses a
// regress_ build) an unprivileged container's Bidirectional mount is
// passed to the runtime: a deliberately broken build that shows the
// simulation checker's propagation-privileged invariant has teeth (see
// docs/checker.md).
const unprivilegedBidirectional = false
