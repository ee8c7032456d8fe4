//go:build regress_teeth_terminal

package status

// brokenShowsTerminalEarly: see teeth_terminal.go. This build is
// deliberately broken.
const brokenShowsTerminalEarly = true
