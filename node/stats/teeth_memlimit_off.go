//go:build !regress_teeth_memlimit

package stats

// teethSpecMemoryLimit is off: a container's memory limit is its
// cgroup's (see teeth_memlimit_on.go).
const teethSpecMemoryLimit = false
