package harness

import (
	"context"
	"fmt"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// machineModel is the simulated node's deps.Machine, read from the fake
// runtime's node model so that container usage moves the eviction signals.
type machineModel struct {
	rt   *fakecri.Runtime
	name string
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
	}, nil
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
