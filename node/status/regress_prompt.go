//go:build !regress_prompt

package status

// writeAtOnce reports whether a new status wakes the writers at once: it
// does in every normal build. Built with the tag regress_prompt (tests
// only, never the daemon) it does not: a lost wake-up, the status waiting
// for the next resync (up to ResyncPeriod) or for another pod's change,
// which status-prompt must catch.
func writeAtOnce() bool { return true }
