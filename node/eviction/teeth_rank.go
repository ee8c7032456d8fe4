//go:build !regress_teeth_rank

package eviction

// brokenRank is false in every normal build. Built with the tag
// regress_teeth_rank (tests only; the daemon refuses a regress_ build) the
// ranking ignores priority: a deliberately broken build that shows the
// simulation checker's eviction-order invariant has teeth (see
// docs/checker.md).
const brokenRank = false
