//go:build !regress_teeth_sidecars

package runtimesync

// sidecarWaitsPastGrace is false in every normal build. Built with the
// tag regress_teeth_sidecars (tests only; the daemon refuses a regress_
// build) a sidecar whose preStop hook used up the grace period still
// waits for its turn, with the least stop timeout as what is left, as
// before the fix that followed the kubelet's killContainer: the sidecars
// stop one after another past the grace instead of together. A
// deliberately broken build that shows the simulation checker's
// sidecars-stop-together invariant has teeth (see docs/checker.md).
const sidecarWaitsPastGrace = false
