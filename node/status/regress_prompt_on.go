//go:build regress_prompt

package status

// writeAtOnce: see regress_prompt.go. This build is deliberately broken:
// a new status never wakes the writers.
func writeAtOnce() bool { return false }
