//go:build !regress_teeth_prestop

package lifecycle

// preStopCutAtGrace is false in every normal build. Built with the tag
// regress_teeth_prestop (tests only; the daemon refuses a regress_ build)
// a preStop hook that outlives its grace period is stopped there (its
// context cancelled) instead of abandoned to run on until the container's
// stop, as before the fix that followed the kubelet. A deliberately broken
// build that shows the simulation checker's prestop-abandoned-runs-on
// invariant has teeth (see docs/checker.md).
const preStopCutAtGrace = false
