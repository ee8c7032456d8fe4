//go:build regress_teeth_apparmor

package admission

// ignoreAppArmor: see teeth_apparmor.go. This build is deliberately
// broken.
const ignoreAppArmor = true
