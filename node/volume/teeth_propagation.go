//go:build !regress_teeth_propagation

package volume

// rootDirNotShared is false in every normal build. Built with the tag
// regress_teeth_propagation (tests only; the daemon refuses a regress_
// build) ShareRootDir leaves the root directory private: a deliberately
// broken build that shows the simulation checker's propagation-shared
// invariant has teeth (see docs/checker.md).
const rootDirNotShared = false
