package deps

// CgroupResources are the limits the agent sets on a pod or QoS cgroup. A
// nil field is left as the kernel (or the cgroup's last writer) has it.
type CgroupResources struct {
	// CPUShares is cpu.shares (cgroup v1); on cgroup v2 it becomes
	// cpu.weight by the runtime's conversion.
	CPUShares *uint64
	// CPUQuota is the CFS quota per CPUPeriod, in microseconds; -1 is no
	// limit.
	CPUQuota *int64
	// CPUPeriod is the CFS period in microseconds.
	CPUPeriod *uint64
	// Memory is the memory limit in bytes; 0 or less is no limit (max).
	Memory *int64
	// HugePageLimits maps a huge page size in bytes to a limit in bytes.
	HugePageLimits map[int64]int64
}

// Cgroups creates, updates, lists and removes the cgroups the agent owns
// (kubepods, the QoS classes, one per pod). A path is a cgroup's name in
// cgroupfs form relative to the root of the hierarchy (under the systemd
// driver, the expanded slice path: /kubepods.slice/kubepods-burstable.slice);
// on cgroup v1 the cgroup exists in every controller's hierarchy. Real:
// github.com/opencontainers/cgroups (node/real/cgroups). Simulated: a model
// of the tree (sim/harness).
type Cgroups interface {
	// Ensure creates the cgroup at path (and its parents) if missing and
	// applies r to it.
	Ensure(path string, r CgroupResources) error
	// Remove removes the cgroup at path with whatever cgroups it holds;
	// a path that does not exist is not an error. It fails while a
	// process still runs in it.
	Remove(path string) error
	// List returns the names of the cgroups directly under path, sorted;
	// a path that does not exist has none.
	List(path string) ([]string, error)
}
