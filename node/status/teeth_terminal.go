//go:build !regress_teeth_terminal

package status

// brokenShowsTerminalEarly is false in every normal build. Built with the
// tag regress_teeth_terminal (tests only; the daemon refuses a regress_
// build) a terminal phase is written as soon as the pod's status has it,
// while its containers (sidecars stopping after the app or a failed init
// container) may still run: a deliberately broken build that the
// terminal-after-stopped invariant catches (see docs/checker.md).
const brokenShowsTerminalEarly = false
