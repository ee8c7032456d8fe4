//go:build !regress_teeth_readiness

package prober

// readinessWaitsForTick is false in every normal build. Built with the
// tag regress_teeth_readiness (tests only; the daemon refuses a regress_
// build) a started instance that is not ready does not wake its readiness
// worker: its readiness is probed at the worker's next period tick, not at
// once, as before the fix that followed the kubelet's UpdatePodStatus. A
// deliberately broken build that shows the simulation checker's
// readiness-at-once invariant has teeth (see docs/checker.md).
const readinessWaitsForTick = false
