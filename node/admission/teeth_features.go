//go:build !regress_teeth_features

package admission

// ignoreDeclaredFeatures is false in every normal build. Built with the
// tag regress_teeth_features (tests only; the daemon refuses a regress_
// build) admission admits every pod whatever node features it needs: a
// deliberately broken build that shows the simulation checker's
// features-declared invariant has teeth (see docs/checker.md).
const ignoreDeclaredFeatures = false
