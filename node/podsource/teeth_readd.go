//go:build !regress_teeth_readd

package podsource

// brokenIgnoresRemovals is false in every normal build. Built with the
// tag regress_teeth_readd (tests only; the daemon refuses a regress_
// build) the file source ignores the removals its directory watch saw,
// so a manifest removed and written back unchanged before the next scan
// keeps its pod running: a deliberately broken build that the
// static-readd-restarts invariant catches (see docs/checker.md).
const brokenIgnoresRemovals = false
