//go:build regress_teeth_propagation

package volume

// rootDirNotShared: see teeth_propagation.go. This build is deliberately
// broken.
const rootDirNotShared = true
