//go:build regress_teeth_memlimit

package stats

// teethSpecMemoryLimit is the broken build regress_teeth_memlimit: a
// container's memory limit is its spec's, not the page-rounded value its
// cgroup holds, as lockstep reported it before; the checker's
// stats-memory-limit invariant must catch it.
const teethSpecMemoryLimit = true
