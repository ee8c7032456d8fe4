//go:build !regress_teeth_probekill

package runtimesync

// probeKillWaitsForExit is false in every normal build. Built with the
// tag regress_teeth_probekill (tests only; the daemon refuses a regress_
// build) a container killed for its liveness or startup probe under
// restartPolicy OnFailure is not started in the same sync: its restart is
// left to its exit code, so one that exits 0 on SIGTERM never runs
// again. A deliberately broken build that shows the simulation checker's
// probe-restarts invariant has teeth (see docs/checker.md).
const probeKillWaitsForExit = false
