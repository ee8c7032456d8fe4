//go:build regress_teeth_grace

package podutil

// brokenGraceSeconds: see teeth_grace.go. This build is deliberately
// broken.
const brokenGraceSeconds = 3
