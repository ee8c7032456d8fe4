//go:build !regress_teeth_devstream

package devicemanager

// teethRelistAfterStreamEnd is false in every normal build. Built with the
// tag regress_teeth_devstream (tests only; the daemon refuses a regress_
// build) a plugin whose ListAndWatch stream ends keeps its devices as
// they were (healthy ones stay allocatable) and is listened to again a
// second later, as a naive reconnecting manager would. A deliberately
// broken build that shows the simulation checker's device-plugin-down
// invariant has teeth (see docs/checker.md).
const teethRelistAfterStreamEnd = false
