//go:build !regress_teeth_devadmit

package podadmit

// teethNodeExtendedIgnored is false in every normal build. Built with the
// tag regress_teeth_devadmit (tests only; the daemon refuses a regress_
// build) admission ignores the extended resources of the Node's own
// allocatable, lockstep's old behaviour: a device resource whose plugin
// was removed past its grace, unknown to a restarted agent, is then no
// resource of the node's, and a pod asking for it is admitted and runs
// without devices. A deliberately broken build that shows the simulation
// checker's devices-once invariant has teeth (see docs/checker.md).
const teethNodeExtendedIgnored = false
