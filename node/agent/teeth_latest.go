//go:build !regress_teeth_latest

package agent

// brokenKeepsStaleMirror is false in every normal build. Built with the
// tag regress_teeth_latest (tests only; the daemon refuses a regress_
// build) a static pod's mirror pod, once created, is never replaced by
// the mirror of a newer version of the manifest: a deliberately broken
// build that the static-latest invariant catches (see docs/checker.md).
const brokenKeepsStaleMirror = false
