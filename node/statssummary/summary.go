// Package statssummary builds the kubelet's stats Summary
// (/stats/summary, k8s.io/kubelet/pkg/apis/stats/v1alpha1) from what the
// CRI runtime and the machine port report. It is a pure function of its
// inputs: the caller does the I/O (ListPodSandboxStats, ListContainerStats,
// ListContainers, Machine.Info/Usage) and passes the time of the snapshot.
//
// What is reported follows the upstream kubelet's CRI stats provider:
//   - the node's memory from the machine (working set = capacity −
//     available), its root filesystem (capacity, available, used, inodes)
//     and its process limits; its CPU from the machine when it reports it
//     (LocalUsage.NodeCPU), else the sum of the pods' CPU (system
//     processes are then not counted);
//   - one entry per managed pod that the runtime knows (a sandbox with
//     stats, or any container), with its running containers only: an
//     exited instance of a container is not reported, like upstream;
//   - per container: CPU, memory, swap (when the runtime reports it), the
//     writable layer (rootfs) and, when
//     the agent measured them (LocalUsage), its log files;
//   - per pod: CPU, memory, network and process count from the sandbox's
//     stats when the runtime reports them (containerd 1.7+), else CPU and
//     memory summed over its containers (and the network when the caller
//     passes sandbox stats holding only that); swap summed over its
//     containers; the measured volumes
//     (VolumeStats); ephemeral storage as the sum of the containers'
//     writable layers and logs and of the local ephemeral volumes
//     (emptyDir on disk, configMap), as upstream counts it.
package statssummary

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/volume/plugin"
)

// FsUsage is the space and inodes some files take.
type FsUsage struct {
	// UsedBytes is the files' size (apparent size, not blocks).
	UsedBytes uint64
	// InodesUsed counts files, directories and links.
	InodesUsed uint64
}

// LocalUsage is what the agent measured itself rather than the runtime:
// by pod UID, each volume's usage by volume name and each container's logs
// by container name (nil maps measure nothing); and the node's CPU (nil:
// the node's CPU is the sum of the pods').
type LocalUsage struct {
	Volumes map[types.UID]map[string]FsUsage
	Logs    map[types.UID]map[string]FsUsage
	NodeCPU *runtimeapi.CpuUsage
	// Kernel, when set, completes the Summary with the kernel's figures
	// of the cgroups (applyKernel).
	Kernel *Kernel
}

// Build returns the Summary of node nodeName at time now. pods are the
// managed pods (their order is kept); sandboxStats, containerStats and
// containers are the runtime's lists (any order; sandboxStats may be nil
// when the runtime does not implement ListPodSandboxStats); local is what
// the agent measured of volumes and logs.
func Build(nodeName string, now time.Time, machine deps.MachineInfo, usage deps.MachineUsage, pods []*corev1.Pod, sandboxStats []*runtimeapi.PodSandboxStats, containerStats []*runtimeapi.ContainerStats, containers []*runtimeapi.Container, local LocalUsage) *statsv1alpha1.Summary {
	idx := index(sandboxStats, containerStats, containers)
	out := &statsv1alpha1.Summary{Pods: []statsv1alpha1.PodStats{}}
	for _, pod := range pods {
		ps, ok := podStats(pod, idx, now)
		if ok {
			addLocal(&ps, pod, local, now, usage)
			out.Pods = append(out.Pods, ps)
		}
	}
	out.Node = nodeStats(nodeName, now, machine, usage, out.Pods)
	if local.NodeCPU != nil {
		out.Node.CPU = cpuStats(local.NodeCPU)
	}
	if local.Kernel != nil {
		applyKernel(out, pods, containers, *local.Kernel, now, usage)
	}
	return out
}

// runtimeIndex groups the runtime's lists by pod UID and container ID.
type runtimeIndex struct {
	sandboxes  map[string][]*runtimeapi.PodSandboxStats // by pod UID, list order
	containers map[string][]*runtimeapi.Container       // by pod UID, list order
	stats      map[string]*runtimeapi.ContainerStats    // by container ID
}

// index builds the lookups Build needs. Maps are only read by key.
func index(sandboxStats []*runtimeapi.PodSandboxStats, containerStats []*runtimeapi.ContainerStats, containers []*runtimeapi.Container) runtimeIndex {
	idx := runtimeIndex{
		sandboxes:  map[string][]*runtimeapi.PodSandboxStats{},
		containers: map[string][]*runtimeapi.Container{},
		stats:      map[string]*runtimeapi.ContainerStats{},
	}
	for _, s := range sandboxStats {
		uid := s.GetAttributes().GetMetadata().GetUid()
		if uid == "" {
			uid = s.GetAttributes().GetLabels()[podstate.LabelPodUID]
		}
		if uid != "" {
			idx.sandboxes[uid] = append(idx.sandboxes[uid], s)
		}
	}
	for _, c := range containers {
		if uid := c.GetLabels()[podstate.LabelPodUID]; uid != "" {
			idx.containers[uid] = append(idx.containers[uid], c)
		}
	}
	for _, s := range containerStats {
		if id := s.GetAttributes().GetId(); id != "" {
			idx.stats[id] = s
		}
	}
	return idx
}

// podStats returns pod's stats, or false when the runtime knows nothing of
// the pod.
func podStats(pod *corev1.Pod, idx runtimeIndex, now time.Time) (statsv1alpha1.PodStats, bool) {
	uid := string(pod.UID)
	all := idx.containers[uid]
	sandboxes := idx.sandboxes[uid]
	if len(all) == 0 && len(sandboxes) == 0 {
		return statsv1alpha1.PodStats{}, false
	}
	ps := statsv1alpha1.PodStats{
		PodRef:     statsv1alpha1.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: uid},
		Containers: []statsv1alpha1.ContainerStats{},
	}
	if pod.Status.StartTime != nil {
		ps.StartTime = *pod.Status.StartTime
	}
	var running []*runtimeapi.Container
	for _, c := range all {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running = append(running, c)
		}
	}
	for _, c := range running {
		ps.Containers = append(ps.Containers, containerStats(c, idx.stats[c.GetId()]))
	}
	slices.SortStableFunc(ps.Containers, func(a, b statsv1alpha1.ContainerStats) int { return cmp.Compare(a.Name, b.Name) })

	sb := pickSandbox(sandboxes, running)
	linux := sb.GetLinux()
	if linux.GetCpu() != nil {
		ps.CPU = cpuStats(linux.GetCpu())
	} else {
		ps.CPU = sumCPU(ps.Containers, now)
	}
	if linux.GetMemory() != nil {
		ps.Memory = memoryStats(linux.GetMemory())
	} else {
		ps.Memory = sumMemory(ps.Containers, now)
	}
	if n := linux.GetNetwork(); n != nil {
		ps.Network = networkStats(n, now)
	}
	if p := linux.GetProcess(); p != nil && p.GetProcessCount() != nil {
		ps.ProcessStats = &statsv1alpha1.ProcessStats{ProcessCount: u64p(p.GetProcessCount())}
	}
	ps.Swap = sumSwap(ps.Containers)
	ps.EphemeralStorage = sumRootfs(ps.Containers)
	return ps, true
}

// pickSandbox chooses the sandbox whose stats describe the pod: the one
// its running containers live in, else the last listed (runtimes list in
// creation order, so the newest). It returns nil when there is none.
func pickSandbox(sandboxes []*runtimeapi.PodSandboxStats, running []*runtimeapi.Container) *runtimeapi.PodSandboxStats {
	for _, c := range running {
		for _, s := range sandboxes {
			if s.GetAttributes().GetId() == c.GetPodSandboxId() {
				return s
			}
		}
	}
	if len(sandboxes) == 0 {
		return nil
	}
	return sandboxes[len(sandboxes)-1]
}

// containerStats converts one running container and its stats (nil when
// the runtime had none for it).
func containerStats(c *runtimeapi.Container, s *runtimeapi.ContainerStats) statsv1alpha1.ContainerStats {
	name := c.GetLabels()[podstate.LabelContainerName]
	if name == "" {
		name = c.GetMetadata().GetName()
	}
	cs := statsv1alpha1.ContainerStats{Name: name, StartTime: nanoTime(c.GetCreatedAt())}
	if s == nil {
		return cs
	}
	if s.GetCpu() != nil {
		cs.CPU = cpuStats(s.GetCpu())
	}
	if s.GetMemory() != nil {
		cs.Memory = memoryStats(s.GetMemory())
	}
	if sw := s.GetSwap(); sw != nil {
		cs.Swap = &statsv1alpha1.SwapStats{Time: nanoTime(sw.GetTimestamp()),
			SwapAvailableBytes: u64p(sw.GetSwapAvailableBytes()), SwapUsageBytes: u64p(sw.GetSwapUsageBytes())}
	}
	if l := s.GetWritableLayer(); l != nil {
		cs.Rootfs = &statsv1alpha1.FsStats{
			Time:       nanoTime(l.GetTimestamp()),
			UsedBytes:  u64p(l.GetUsedBytes()),
			InodesUsed: u64p(l.GetInodesUsed()),
		}
	}
	return cs
}

// cpuStats converts CRI CPU usage.
func cpuStats(c *runtimeapi.CpuUsage) *statsv1alpha1.CPUStats {
	return &statsv1alpha1.CPUStats{
		Time:                 nanoTime(c.GetTimestamp()),
		UsageNanoCores:       u64p(c.GetUsageNanoCores()),
		UsageCoreNanoSeconds: u64p(c.GetUsageCoreNanoSeconds()),
	}
}

// memoryStats converts CRI memory usage.
func memoryStats(m *runtimeapi.MemoryUsage) *statsv1alpha1.MemoryStats {
	return &statsv1alpha1.MemoryStats{
		Time:            nanoTime(m.GetTimestamp()),
		AvailableBytes:  u64p(m.GetAvailableBytes()),
		UsageBytes:      u64p(m.GetUsageBytes()),
		WorkingSetBytes: u64p(m.GetWorkingSetBytes()),
		RSSBytes:        u64p(m.GetRssBytes()),
		PageFaults:      u64p(m.GetPageFaults()),
		MajorPageFaults: u64p(m.GetMajorPageFaults()),
	}
}

// networkStats converts a sandbox's network usage: the default interface
// inline, every interface in Interfaces; without a timestamp, it is the
// sample's.
func networkStats(n *runtimeapi.NetworkUsage, now time.Time) *statsv1alpha1.NetworkStats {
	out := &statsv1alpha1.NetworkStats{Time: nanoTime(n.GetTimestamp())}
	if out.Time.IsZero() {
		out.Time = metav1.NewTime(now) // containerd 1.6 leaves it unset
	}
	if d := n.GetDefaultInterface(); d != nil {
		out.InterfaceStats = interfaceStats(d)
	}
	for _, i := range n.GetInterfaces() {
		out.Interfaces = append(out.Interfaces, interfaceStats(i))
	}
	if len(out.Interfaces) == 0 && n.GetDefaultInterface() != nil {
		// containerd 1.6 reports the default interface alone; it is one
		// of the pod's interfaces, and the kubelet (cAdvisor's list)
		// always lists it there too.
		out.Interfaces = []statsv1alpha1.InterfaceStats{out.InterfaceStats}
	}
	return out
}

// interfaceStats converts one interface's usage.
func interfaceStats(i *runtimeapi.NetworkInterfaceUsage) statsv1alpha1.InterfaceStats {
	return statsv1alpha1.InterfaceStats{
		Name:     i.GetName(),
		RxBytes:  u64p(i.GetRxBytes()),
		RxErrors: u64p(i.GetRxErrors()),
		TxBytes:  u64p(i.GetTxBytes()),
		TxErrors: u64p(i.GetTxErrors()),
	}
}

// sumCPU adds the containers' CPU; nil when none reports CPU. Its time is
// the newest of theirs.
func sumCPU(cs []statsv1alpha1.ContainerStats, now time.Time) *statsv1alpha1.CPUStats {
	var out *statsv1alpha1.CPUStats
	for _, c := range cs {
		if c.CPU == nil {
			continue
		}
		if out == nil {
			out = &statsv1alpha1.CPUStats{}
		}
		out.Time = later(out.Time, c.CPU.Time)
		out.UsageNanoCores = addp(out.UsageNanoCores, c.CPU.UsageNanoCores)
		out.UsageCoreNanoSeconds = addp(out.UsageCoreNanoSeconds, c.CPU.UsageCoreNanoSeconds)
	}
	if out != nil && out.Time.IsZero() {
		out.Time = metav1.NewTime(now)
	}
	return out
}

// sumMemory adds the containers' memory usage; nil when none reports
// memory. Available bytes are not additive and are left out.
func sumMemory(cs []statsv1alpha1.ContainerStats, now time.Time) *statsv1alpha1.MemoryStats {
	var out *statsv1alpha1.MemoryStats
	for _, c := range cs {
		if c.Memory == nil {
			continue
		}
		if out == nil {
			out = &statsv1alpha1.MemoryStats{}
		}
		m := c.Memory
		out.Time = later(out.Time, m.Time)
		out.UsageBytes = addp(out.UsageBytes, m.UsageBytes)
		out.WorkingSetBytes = addp(out.WorkingSetBytes, m.WorkingSetBytes)
		out.RSSBytes = addp(out.RSSBytes, m.RSSBytes)
		out.PageFaults = addp(out.PageFaults, m.PageFaults)
		out.MajorPageFaults = addp(out.MajorPageFaults, m.MajorPageFaults)
	}
	if out != nil && out.Time.IsZero() {
		out.Time = metav1.NewTime(now)
	}
	return out
}

// sumSwap adds the containers' swap usage into the pod's (CRI has no
// sandbox swap); nil when no container reports swap.
func sumSwap(cs []statsv1alpha1.ContainerStats) *statsv1alpha1.SwapStats {
	var out *statsv1alpha1.SwapStats
	for _, c := range cs {
		if c.Swap == nil || c.Swap.SwapUsageBytes == nil {
			continue
		}
		if out == nil {
			out = &statsv1alpha1.SwapStats{}
		}
		out.Time = later(out.Time, c.Swap.Time)
		out.SwapUsageBytes = addp(out.SwapUsageBytes, c.Swap.SwapUsageBytes)
	}
	return out
}

// sumRootfs adds the containers' writable layers into the pod's ephemeral
// storage; nil when no container reports one.
func sumRootfs(cs []statsv1alpha1.ContainerStats) *statsv1alpha1.FsStats {
	var out *statsv1alpha1.FsStats
	for _, c := range cs {
		if c.Rootfs == nil {
			continue
		}
		if out == nil {
			out = &statsv1alpha1.FsStats{}
		}
		out.Time = later(out.Time, c.Rootfs.Time)
		out.UsedBytes = addp(out.UsedBytes, c.Rootfs.UsedBytes)
		out.InodesUsed = addp(out.InodesUsed, c.Rootfs.InodesUsed)
	}
	return out
}

// addLocal adds the measured logs and volumes of pod to ps: each running
// container's Logs (with the node filesystem's capacity, where logs live),
// the pod's VolumeStats in spec order, and the logs and local ephemeral
// volumes to its EphemeralStorage.
func addLocal(ps *statsv1alpha1.PodStats, pod *corev1.Pod, local LocalUsage, now time.Time, usage deps.MachineUsage) {
	t := metav1.NewTime(now)
	logs := local.Logs[pod.UID]
	for i := range ps.Containers {
		c := &ps.Containers[i]
		u, ok := logs[c.Name]
		if !ok {
			continue
		}
		c.Logs = nodeFsStats(t, u, usage)
		ps.EphemeralStorage = addFs(ps.EphemeralStorage, t, u)
	}
	vols := local.Volumes[pod.UID]
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		u, ok := vols[v.Name]
		if !ok {
			continue
		}
		ps.VolumeStats = append(ps.VolumeStats, statsv1alpha1.VolumeStats{Name: v.Name, FsStats: *nodeFsStats(t, u, usage)})
		if localEphemeral(v) {
			ps.EphemeralStorage = addFs(ps.EphemeralStorage, t, u)
		}
	}
}

// localEphemeral reports whether a volume's data counts against the
// pod's ephemeral storage, as its plugin says (an emptyDir on the node's
// disk or a configMap, as upstream decides).
func localEphemeral(v *corev1.Volume) bool {
	p, ok := plugin.For(v)
	return ok && p.Storage(v).PodEphemeral
}

// nodeFsStats is u on the node's filesystem: its usage plus the
// filesystem's capacity and free space and inodes when known.
func nodeFsStats(t metav1.Time, u FsUsage, usage deps.MachineUsage) *statsv1alpha1.FsStats {
	fs := &statsv1alpha1.FsStats{Time: t, UsedBytes: ptr(u.UsedBytes), InodesUsed: ptr(u.InodesUsed)}
	if usage.NodeFSCapacityBytes > 0 {
		fs.CapacityBytes = ptr(usage.NodeFSCapacityBytes)
		fs.AvailableBytes = ptr(usage.NodeFSAvailableBytes)
	}
	if usage.NodeFSInodes > 0 {
		fs.Inodes = ptr(usage.NodeFSInodes)
		fs.InodesFree = ptr(usage.NodeFSInodesFree)
	}
	return fs
}

// addFs adds u to an ephemeral storage total (nil: none yet).
func addFs(total *statsv1alpha1.FsStats, t metav1.Time, u FsUsage) *statsv1alpha1.FsStats {
	if total == nil {
		total = &statsv1alpha1.FsStats{}
	}
	total.Time = later(total.Time, t)
	total.UsedBytes = addp(total.UsedBytes, ptr(u.UsedBytes))
	total.InodesUsed = addp(total.InodesUsed, ptr(u.InodesUsed))
	return total
}

// nodeStats is the node's part of the Summary.
func nodeStats(nodeName string, now time.Time, machine deps.MachineInfo, usage deps.MachineUsage, pods []statsv1alpha1.PodStats) statsv1alpha1.NodeStats {
	t := metav1.NewTime(now)
	ns := statsv1alpha1.NodeStats{NodeName: nodeName}

	cpu := &statsv1alpha1.CPUStats{Time: t, UsageNanoCores: ptr(uint64(0)), UsageCoreNanoSeconds: ptr(uint64(0))}
	for _, p := range pods {
		if p.CPU != nil {
			cpu.UsageNanoCores = addp(cpu.UsageNanoCores, p.CPU.UsageNanoCores)
			cpu.UsageCoreNanoSeconds = addp(cpu.UsageCoreNanoSeconds, p.CPU.UsageCoreNanoSeconds)
		}
	}
	ns.CPU = cpu

	if machine.MemoryBytes > 0 {
		used := subSat(machine.MemoryBytes, usage.MemoryAvailableBytes)
		ns.Memory = &statsv1alpha1.MemoryStats{
			Time:            t,
			AvailableBytes:  ptr(usage.MemoryAvailableBytes),
			UsageBytes:      ptr(used),
			WorkingSetBytes: ptr(used),
		}
	}
	if usage.NodeFSCapacityBytes > 0 {
		fs := &statsv1alpha1.FsStats{
			Time:           t,
			CapacityBytes:  ptr(usage.NodeFSCapacityBytes),
			AvailableBytes: ptr(usage.NodeFSAvailableBytes),
			UsedBytes:      ptr(subSat(usage.NodeFSCapacityBytes, usage.NodeFSAvailableBytes)),
		}
		if usage.NodeFSInodes > 0 {
			fs.Inodes = ptr(usage.NodeFSInodes)
			fs.InodesFree = ptr(usage.NodeFSInodesFree)
			fs.InodesUsed = ptr(subSat(usage.NodeFSInodes, usage.NodeFSInodesFree))
		}
		ns.Fs = fs
	}
	if machine.MaxPIDs > 0 {
		maxPID := int64(min(machine.MaxPIDs, 1<<62))
		cur := int64(min(subSat(machine.MaxPIDs, usage.PIDsAvailable), 1<<62))
		ns.Rlimit = &statsv1alpha1.RlimitStats{Time: t, MaxPID: &maxPID, NumOfRunningProcesses: &cur}
	}
	return ns
}

// nanoTime converts CRI Unix nanoseconds; 0 is "unknown" (the zero Time).
func nanoTime(ns int64) metav1.Time {
	if ns == 0 {
		return metav1.Time{}
	}
	return metav1.NewTime(time.Unix(0, ns).UTC())
}

// later returns the later of a and b.
func later(a, b metav1.Time) metav1.Time {
	if b.After(a.Time) {
		return b
	}
	return a
}

// u64p unwraps a CRI UInt64Value; nil stays nil.
func u64p(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	return ptr(v.GetValue())
}

// addp adds b to a where b is known, saturating; a nil a counts as 0.
func addp(a, b *uint64) *uint64 {
	if b == nil {
		return a
	}
	var sum uint64
	if a != nil {
		sum = *a
	}
	if sum+*b < sum {
		sum = ^uint64(0)
	} else {
		sum += *b
	}
	return &sum
}

// subSat returns a−b, or 0 when b > a.
func subSat(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }
