//go:build !regress_teeth_apparmor

package admission

// ignoreAppArmor is false in every normal build. Built with the tag
// regress_teeth_apparmor (tests only; the daemon refuses a regress_ build)
// admission admits a pod asking for AppArmor on a host without it: a
// deliberately broken build that shows the simulation checker's
// apparmor-refused invariant has teeth (see docs/checker.md).
const ignoreAppArmor = false
