package eviction

import (
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/stats"
)

// Observation is a signal's available amount against its capacity
// (bytes, inodes or processes).
type Observation struct {
	Available, Capacity int64
}

// Observations are the observed signals; a signal the node cannot observe
// is absent, and its thresholds are never met.
type Observations map[Signal]Observation

// ContainerUsage is what one running container uses.
type ContainerUsage struct {
	Name string
	// Memory is the working set; Disk the writable layer's bytes.
	Memory, Disk int64
}

// PodUsage is what a pod uses, from the stats Summary.
type PodUsage struct {
	// Memory is the working set; Disk and Inodes the containers' writable
	// layers; Processes the pod's process count.
	Memory, Disk, Inodes, Processes int64
	Containers                      []ContainerUsage
}

// Usages are pod usages by UID; a pod without an entry has no stats.
type Usages map[types.UID]PodUsage

// Observe derives the signals from a sample and its Summary.
// allocatableMemory is the node's allocatable memory (capacity minus
// reserved; ≤ 0 leaves allocatableMemory.available unobserved).
//
// When the runtime's image filesystem has no capacity of its own in the
// machine's usage, it is the node filesystem (one disk), and the imagefs
// signals observe the node filesystem.
func Observe(s stats.Sample, sum *statsv1alpha1.Summary, allocatableMemory int64) (Observations, Usages) {
	obs := Observations{}
	u := s.Usage
	if s.Machine.MemoryBytes > 0 {
		obs[SignalMemoryAvailable] = Observation{Available: clamp(u.MemoryAvailableBytes), Capacity: clamp(s.Machine.MemoryBytes)}
	}
	usages := Usages{}
	var podsWorkingSet int64
	for _, p := range sum.Pods {
		pu := podUsage(p)
		usages[types.UID(p.PodRef.UID)] = pu
		podsWorkingSet += pu.Memory
	}
	if allocatableMemory > 0 {
		obs[SignalAllocatableMemoryAvailable] = Observation{Available: max(allocatableMemory-podsWorkingSet, 0), Capacity: allocatableMemory}
	}
	if u.NodeFSCapacityBytes > 0 {
		obs[SignalNodeFsAvailable] = Observation{Available: clamp(u.NodeFSAvailableBytes), Capacity: clamp(u.NodeFSCapacityBytes)}
	}
	if u.NodeFSInodes > 0 {
		obs[SignalNodeFsInodesFree] = Observation{Available: clamp(u.NodeFSInodesFree), Capacity: clamp(u.NodeFSInodes)}
	}
	if capacity, available := s.ImageFsBytes(); capacity > 0 {
		obs[SignalImageFsAvailable] = Observation{Available: clamp(available), Capacity: clamp(capacity)}
	}
	switch {
	case u.ImageFSInodes > 0:
		obs[SignalImageFsInodesFree] = Observation{Available: clamp(u.ImageFSInodesFree), Capacity: clamp(u.ImageFSInodes)}
	case u.NodeFSInodes > 0:
		obs[SignalImageFsInodesFree] = obs[SignalNodeFsInodesFree]
	}
	if s.Machine.MaxPIDs > 0 {
		obs[SignalPIDAvailable] = Observation{Available: clamp(u.PIDsAvailable), Capacity: clamp(s.Machine.MaxPIDs)}
	}
	return obs, usages
}

// podUsage reads a pod's usage from its Summary entry.
func podUsage(p statsv1alpha1.PodStats) PodUsage {
	var pu PodUsage
	if p.Memory != nil && p.Memory.WorkingSetBytes != nil {
		pu.Memory = clamp(*p.Memory.WorkingSetBytes)
	}
	if p.ProcessStats != nil && p.ProcessStats.ProcessCount != nil {
		pu.Processes = clamp(*p.ProcessStats.ProcessCount)
	}
	for _, c := range p.Containers {
		cu := ContainerUsage{Name: c.Name}
		if c.Memory != nil && c.Memory.WorkingSetBytes != nil {
			cu.Memory = clamp(*c.Memory.WorkingSetBytes)
		}
		if c.Rootfs != nil {
			if c.Rootfs.UsedBytes != nil {
				cu.Disk = clamp(*c.Rootfs.UsedBytes)
			}
			if c.Rootfs.InodesUsed != nil {
				pu.Inodes += clamp(*c.Rootfs.InodesUsed)
			}
		}
		pu.Disk += cu.Disk
		pu.Containers = append(pu.Containers, cu)
	}
	return pu
}

// clamp converts a counter to int64, saturating.
func clamp(v uint64) int64 {
	if v > 1<<62 {
		return 1 << 62
	}
	return int64(v)
}
