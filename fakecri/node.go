package fakecri

import "time"

// NodeModel is the node's capacity and the usage of everything on it that
// is neither a container nor an image (the "base"). Usage reported anywhere
// (NodeUsage, ImageFsInfo, stats) is base + containers + images.
type NodeModel struct {
	// MemoryCapacity and MemoryBase are in bytes.
	MemoryCapacity, MemoryBase uint64
	// CPUCapacityMilli is the node's CPU in millicores; CPUBaseMilli the
	// constant usage of the system outside containers.
	CPUCapacityMilli, CPUBaseMilli uint64
	// Nodefs holds container logs (/var/log/pods) and the base.
	NodefsCapacity, NodefsBase, NodefsInodes, NodefsInodesBase uint64
	// Imagefs (containerd's snapshotter) holds images and containers'
	// writable layers.
	ImagefsCapacity, ImagefsBase, ImagefsInodes, ImagefsInodesBase uint64
	// PIDCapacity and PIDBase count processes.
	PIDCapacity, PIDBase uint64
}

// DefaultNodeModel is a 2-core, 8 GiB node with 100 GiB disks.
func DefaultNodeModel() NodeModel {
	return NodeModel{
		MemoryCapacity: 8 << 30, MemoryBase: 512 << 20,
		CPUCapacityMilli: 2000, CPUBaseMilli: 100,
		NodefsCapacity: 100 << 30, NodefsBase: 10 << 30, NodefsInodes: 6_553_600, NodefsInodesBase: 500_000,
		ImagefsCapacity: 100 << 30, ImagefsBase: 0, ImagefsInodes: 6_553_600, ImagefsInodesBase: 0,
		PIDCapacity: 32_768, PIDBase: 200,
	}
}

// FsUsage is a filesystem's capacity and usage.
type FsUsage struct {
	Capacity, Used, Available      uint64
	Inodes, InodesUsed, InodesFree uint64
}

// NodeUsage is a snapshot of the node's resources at Time.
type NodeUsage struct {
	Time time.Time
	// Memory in bytes: working set of the base plus running containers.
	MemoryCapacity, MemoryWorkingSet, MemoryAvailable uint64
	// CPU: capacity in millicores, usage in nanocores.
	CPUCapacityMilli, CPUUsageNanoCores uint64
	Nodefs, Imagefs                     FsUsage
	PIDCapacity, PIDsUsed               uint64
	// Object counts.
	Sandboxes, Containers, RunningContainers, Images int
}

// NodeUsage returns the node's resource usage now.
func (r *Runtime) NodeUsage() NodeUsage {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	return r.nodeUsage(now)
}

// SetNodeMemoryUsage sets the node's memory usage outside containers (the
// base); the node's working set is then bytes + the containers' working sets.
func (r *Runtime) SetNodeMemoryUsage(bytes uint64) {
	r.mu.Lock()
	defer r.unlock()
	r.node.MemoryBase = bytes
	r.gen++
}

// SetNodeModel replaces the node model (capacities and base usages).
func (r *Runtime) SetNodeModel(m NodeModel) {
	r.mu.Lock()
	defer r.unlock()
	r.node = m
	r.gen++
}

// nodeUsage sums base, containers and images at now. Caller holds r.mu and
// has advanced to now.
func (r *Runtime) nodeUsage(now int64) NodeUsage {
	m := r.node
	u := NodeUsage{
		Time:              time.Unix(0, now).UTC(),
		MemoryCapacity:    m.MemoryCapacity,
		MemoryWorkingSet:  m.MemoryBase,
		CPUCapacityMilli:  m.CPUCapacityMilli,
		CPUUsageNanoCores: m.CPUBaseMilli * 1_000_000,
		PIDCapacity:       m.PIDCapacity,
		PIDsUsed:          m.PIDBase,
		Sandboxes:         len(r.sandboxes),
		Containers:        len(r.containers),
		Images:            len(r.images.byID),
	}
	nodefsUsed, nodefsInodes := m.NodefsBase, m.NodefsInodesBase
	imagefsUsed, imagefsInodes := m.ImagefsBase+r.images.size, m.ImagefsInodesBase+r.images.inodes
	for _, c := range r.containerOrder {
		if c.removed {
			continue
		}
		imagefsUsed = addSatU(imagefsUsed, c.script.disk)
		imagefsInodes++
		if c.logPath != "" {
			nodefsUsed = addSatU(nodefsUsed, c.logBytes)
			nodefsInodes++
		}
		// FAKECRI_WRITE goes to volumes on the node's disk.
		nodefsUsed = addSatU(nodefsUsed, c.writtenAt(now, ""))
		if c.state != runningState {
			continue
		}
		u.RunningContainers++
		u.MemoryWorkingSet = addSatU(u.MemoryWorkingSet, c.memoryAt(now))
		u.CPUUsageNanoCores = addSatU(u.CPUUsageNanoCores, c.script.cpuMilli*1_000_000)
		u.PIDsUsed = addSatU(u.PIDsUsed, c.script.pids)
	}
	u.MemoryAvailable = subSatU(m.MemoryCapacity, u.MemoryWorkingSet)
	u.Nodefs = fsUsage(m.NodefsCapacity, nodefsUsed, m.NodefsInodes, nodefsInodes)
	u.Imagefs = fsUsage(m.ImagefsCapacity, imagefsUsed, m.ImagefsInodes, imagefsInodes)
	return u
}

// fsUsage fills the derived fields of a filesystem's usage.
func fsUsage(capacity, used, inodes, inodesUsed uint64) FsUsage {
	return FsUsage{
		Capacity: capacity, Used: used, Available: subSatU(capacity, used),
		Inodes: inodes, InodesUsed: inodesUsed, InodesFree: subSatU(inodes, inodesUsed),
	}
}

// SetNodeDiskUsage sets the usage of the node filesystem and the image
// filesystem outside containers, logs and images (the bases), in bytes.
func (r *Runtime) SetNodeDiskUsage(nodefs, imagefs uint64) {
	r.mu.Lock()
	defer r.unlock()
	r.node.NodefsBase, r.node.ImagefsBase = nodefs, imagefs
	r.gen++
}

// SetNodePIDUsage sets how many processes run outside containers.
func (r *Runtime) SetNodePIDUsage(pids uint64) {
	r.mu.Lock()
	defer r.unlock()
	r.node.PIDBase = pids
	r.gen++
}

// Node returns the node model (capacities and bases).
func (r *Runtime) Node() NodeModel {
	r.mu.Lock()
	defer r.unlock()
	return r.node
}
