//go:build regress_teeth_readd

package podsource

// brokenIgnoresRemovals: see teeth_readd.go. This build is deliberately
// broken.
const brokenIgnoresRemovals = true
