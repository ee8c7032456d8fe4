//go:build regress_teeth_latest

package agent

// brokenKeepsStaleMirror: see teeth_latest.go. This build is deliberately
// broken.
const brokenKeepsStaleMirror = true
