//go:build !regress_teeth_grace

package podutil

// brokenGraceSeconds is 0 in every normal build. Built with the tag
// regress_teeth_grace (tests only; the daemon refuses a regress_ build) a
// deleted pod's containers get 3 s more than the deletion's grace period:
// a deliberately broken build that the 5 s slack grace-honoured used to
// allow hid, and that the tightened invariant catches (see
// docs/checker.md).
const brokenGraceSeconds = 0
