package deps

import (
	"context"
	"time"
)

// Unlimited is how a CgroupSpec reports a limit the cgroup does not set
// ("max").
const Unlimited = ^uint64(0)

// CgroupStats is what the kernel reports of one cgroup and of the
// processes in it: what cAdvisor reads for a container, a pod or a system
// container. Zero fields are unknown or zero alike; the readers say which
// they fill.
type CgroupStats struct {
	// Path is the cgroup's path below the hierarchy's root ("/" is the
	// root).
	Path string
	// Created is when the cgroup was made (its directory's change time);
	// zero when unknown.
	Created time.Time
	CPU     CgroupCPU
	Memory  CgroupMemory
	Spec    CgroupSpec
	// IO is the block I/O per device (io.stat; v1's blkio service
	// counters), in device order.
	IO        []DeviceIO
	Processes ProcessStats
	// PSI is the pressure stall information: a v2 cgroup's pressure
	// files, nil when it has none. On cgroup v1 every cgroup but the root
	// reports all zero (no v1 cgroup has pressure, and upstream's kubelet
	// converts cAdvisor's empty figures, never nil), the root the
	// machine's (/proc/pressure).
	PSI *CgroupPSI
	// Disks are the machine's block devices' counters (/proc/diskstats)
	// and Network the host's interfaces' (/proc/net/dev, the loopback
	// left out), read for the root only.
	Disks   []DiskStats
	Network []NetInterface
}

// DiskStats is one block device's counters since boot.
type DiskStats struct {
	// Device is its node ("/dev/vda").
	Device                                           string
	ReadsMerged, SectorsRead, ReadTimeMillis         uint64
	WritesMerged, SectorsWritten, WriteTimeMillis    uint64
	IOInProgress, IOTimeMillis, WeightedIOTimeMillis uint64
}

// CgroupCPU is a cgroup's cumulative CPU time in nanoseconds.
type CgroupCPU struct {
	UsageNanos, UserNanos, SystemNanos uint64
}

// CgroupMemory is a cgroup's memory accounting in bytes and counts.
type CgroupMemory struct {
	// Usage is memory.current (v1: memory.usage_in_bytes); MaxUsage its
	// peak (memory.peak, memory.max_usage_in_bytes; 0 where the kernel
	// has none).
	Usage, MaxUsage uint64
	// WorkingSet is Usage less the inactive file pages.
	WorkingSet uint64
	// Cache is the page cache (memory.stat file; v1 total_cache), RSS
	// the anonymous memory (anon; total_rss), MappedFile the mapped page
	// cache (file_mapped; total_mapped_file), Swap the swap in use
	// (memory.swap.current; total_swap). On v1 the total_ figures are
	// the hierarchy's where memory.use_hierarchy is on, as cAdvisor reads
	// them.
	Cache, RSS, MappedFile, Swap uint64
	// PageFaults and MajorPageFaults are memory.stat's pgfault and
	// pgmajfault (recursive on cgroup v2, the cgroup's own on v1).
	PageFaults, MajorPageFaults uint64
	// Failcnt is how often the limit was hit (cgroup v1's
	// memory.failcnt; 0 on v2, which has none).
	Failcnt uint64
	// Events are memory.events' counters (v2); on v1 only the OOM kills,
	// from memory.oom_control.
	EventsHigh, EventsMax, EventsOOM, EventsOOMKill uint64
}

// CgroupSpec is what the cgroup limits, as the kernel holds it (a memory
// limit is rounded down to a page multiple by the kernel). Unlimited
// stands for "max" (v2) and for v1's "unlimited", a limit above 2^62
// bytes (9223372036854771712), as cAdvisor and the kubelet take it.
type CgroupSpec struct {
	MemoryLimit, MemoryReservation, SwapLimit uint64
	// CPUPeriod and CPUQuota are in microseconds (quota Unlimited: none);
	// CPUShares are v1 shares (on v2, from cpu.weight as cAdvisor
	// converts it).
	CPUPeriod, CPUQuota, CPUShares uint64
	// PidsMax is pids.max (0: unlimited, as runc reports it).
	PidsMax uint64
}

// DeviceIO is one block device's I/O by a cgroup.
type DeviceIO struct {
	Major, Minor uint64
	// Device is the device's node ("/dev/vda"), "" when unknown.
	Device                               string
	ReadBytes, WriteBytes, Reads, Writes uint64
}

// ProcessStats counts a cgroup's processes and what they hold.
type ProcessStats struct {
	Processes, Threads, FileDescriptors, Sockets uint64
	// OpenFilesSoftLimit is the soft RLIMIT_NOFILE of the cgroup's first
	// process; 0 when unknown.
	OpenFilesSoftLimit uint64
}

// CgroupPSI is a cgroup's pressure for CPU, memory and I/O.
type CgroupPSI struct {
	CPU, Memory, IO PSI
}

// PSI is one resource's pressure: some and full.
type PSI struct {
	Some, Full PSIData
}

// PSIData is one line of a pressure file: the total stall in
// microseconds and its averages in percent.
type PSIData struct {
	Total                uint64
	Avg10, Avg60, Avg300 float64
}

// NetInterface is one network interface's counters (/proc/net/dev).
type NetInterface struct {
	Name                                    string
	RxBytes, RxPackets, RxErrors, RxDropped uint64
	TxBytes, TxPackets, TxErrors, TxDropped uint64
}

// CgroupStatsReader reads the kernel's figures of cgroups. Real: the
// cgroup filesystem and /proc (node/real/cgstats). Simulated: the
// harness's model of the runtime's containers.
type CgroupStatsReader interface {
	// Containers reads the cgroups of the runtime's containers with these
	// IDs; a container whose cgroup is not found is left out.
	Containers(ctx context.Context, ids []string) (map[string]CgroupStats, error)
	// Pods reads the pod-level cgroups of the pods with these UIDs; a pod
	// whose cgroup is not found is left out.
	Pods(ctx context.Context, uids []string) (map[string]CgroupStats, error)
	// System reads the node's cgroups by the Summary's system container
	// names ("kubelet", "runtime", "pods", "misc"; those the host has)
	// and the root's as "".
	System(ctx context.Context) (map[string]CgroupStats, error)
}
