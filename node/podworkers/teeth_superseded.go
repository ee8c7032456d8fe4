//go:build !regress_teeth_superseded

package podworkers

// brokenStartsSuperseded is false in every normal build. Built with the
// tag regress_teeth_superseded (tests only; the daemon refuses a
// regress_ build) the kill of a static pod that still waits for its turn
// to start (an earlier version of its full name still terminating) is
// lost: a version whose manifest was edited again before it started runs
// once its turn comes. A deliberately broken build that the
// static-superseded-never-starts invariant catches (see docs/checker.md).
const brokenStartsSuperseded = false
