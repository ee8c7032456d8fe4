package harness

import (
	"context"
	"fmt"
	"slices"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// machineModel is the simulated node's deps.Machine, read from the fake
// runtime's node model so that container usage moves the eviction signals.
type machineModel struct {
	rt   *fakecri.Runtime
	name string
	cpus []deps.CPUInfo // nil: Topology(1, 1, capacity, 1)
	// appArmor: the kernel has AppArmor enabled (Config.AppArmor).
	appArmor bool
}

func (m machineModel) Info(context.Context) (deps.MachineInfo, error) {
	u := m.rt.NodeUsage()
	return deps.MachineInfo{
		MachineID: fmt.Sprintf("sim-%s", m.name), BootID: "sim-boot", KernelVersion: "6.1.0-sim",
		OSImage: "lockstep simulated node", Architecture: "amd64",
		CPUs: int(u.CPUCapacityMilli / 1000), MemoryBytes: u.MemoryCapacity, MaxPIDs: u.PIDCapacity,
		// A modern host: cgroup v2, both x86 huge page sizes, none reserved.
		HugePages: []deps.HugePagePool{{PageSizeBytes: 2 << 20}, {PageSizeBytes: 1 << 30}},
		CgroupV2:  true,
		AppArmor:  m.appArmor,
		Topology:  m.topology(int(u.CPUCapacityMilli / 1000)),
		NUMANodes: m.numaNodes(u.MemoryCapacity),
	}, nil
}

// numaNodes shares the node's memory evenly among the topology's NUMA
// nodes.
func (m machineModel) numaNodes(memory uint64) []deps.NUMANode {
	var ids []int
	for _, c := range m.topology(1) {
		if !slices.Contains(ids, c.NUMANodeID) {
			ids = append(ids, c.NUMANodeID)
		}
	}
	slices.Sort(ids)
	out := make([]deps.NUMANode, 0, len(ids))
	for _, id := range ids {
		out = append(out, deps.NUMANode{ID: id, MemoryBytes: memory / uint64(len(ids))})
	}
	return out
}

func (m machineModel) topology(cpus int) []deps.CPUInfo {
	if m.cpus != nil {
		return slices.Clone(m.cpus)
	}
	return Topology(1, 1, cpus, 1)
}

// Topology is a machine of sockets × NUMA nodes per socket × cores per
// NUMA node × threads per core, numbered as Linux numbers x86 threads:
// the first thread of every core, then the second ones (CPU n and
// n+cores are siblings), cores of node 0 first.
func Topology(sockets, numaPerSocket, coresPerNUMA, threadsPerCore int) []deps.CPUInfo {
	cores := sockets * numaPerSocket * coresPerNUMA
	var out []deps.CPUInfo
	for t := 0; t < threadsPerCore; t++ {
		for core := 0; core < cores; core++ {
			numa := core / coresPerNUMA
			out = append(out, deps.CPUInfo{ID: t*cores + core, CoreID: core, SocketID: numa / numaPerSocket, NUMANodeID: numa})
		}
	}
	slices.SortFunc(out, func(a, b deps.CPUInfo) int { return a.ID - b.ID })
	return out
}

func (m machineModel) Usage(context.Context) (deps.MachineUsage, error) {
	u := m.rt.NodeUsage()
	return deps.MachineUsage{
		MemoryAvailableBytes: u.MemoryAvailable,
		NodeFSAvailableBytes: u.Nodefs.Available, NodeFSCapacityBytes: u.Nodefs.Capacity,
		NodeFSInodesFree: u.Nodefs.InodesFree, NodeFSInodes: u.Nodefs.Inodes,
		ImageFSAvailableBytes: u.Imagefs.Available, ImageFSCapacityBytes: u.Imagefs.Capacity,
		ImageFSInodesFree: u.Imagefs.InodesFree, ImageFSInodes: u.Imagefs.Inodes,
		PIDsAvailable: u.PIDCapacity - min(u.PIDsUsed, u.PIDCapacity),
	}, nil
}

// diskUsage is the simulated node's deps.DiskUsage: the in-memory files
// under a directory plus what the fake runtime's containers are scripted
// to have written there (FAKECRI_WRITE).
type diskUsage struct {
	files *memfs.FS
	rt    *fakecri.Runtime
}

func (d diskUsage) DirUsage(_ context.Context, dir string) (deps.DirUsage, error) {
	bytes, inodes, err := d.files.TreeUsage(dir)
	if err != nil {
		return deps.DirUsage{}, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return deps.DirUsage{Bytes: bytes + d.rt.WrittenUnder(dir), Inodes: inodes}, nil
}
