//go:build !regress_teeth_volstatus

package agent

// statusAfterVolumes is false in every normal build. Built with the tag
// regress_teeth_volstatus (tests only; the daemon refuses a regress_
// build) a sync waits for the pod's volumes before it writes the pod's
// status, as lockstep did before: a pod whose ConfigMap or Secret is
// missing shows no status while the wait lasts. A deliberately
// broken build that shows the simulation checker's volume-wait-status
// invariant has teeth (see docs/checker.md).
const statusAfterVolumes = false
