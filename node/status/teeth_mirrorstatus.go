//go:build !regress_teeth_mirrorstatus

package status

// brokenWritesSupersededStatic is false in every normal build. Built with
// the tag regress_teeth_mirrorstatus (tests only; the daemon refuses a
// regress_ build) the status of a static pod that is no longer desired
// (its manifest edited or removed) is still written to the mirror pod
// that carries its hash: a deliberately broken build that the
// mirror-follows-current invariant catches (see docs/checker.md).
const brokenWritesSupersededStatic = false
