package statssummary

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

// Kernel is what the kernel reported of the sample's cgroups (the
// figures cAdvisor gives the kubelet), which complete the runtime's:
// nil maps report nothing.
type Kernel struct {
	// Containers by runtime ID, Pods by pod UID, System by the Summary's
	// system container names and the root as "".
	Containers, Pods, System map[string]deps.CgroupStats
	// CPU are their CPU usages with rates: "c/<id>", "p/<uid>",
	// "sys/<name>".
	CPU map[string]*runtimeapi.CpuUsage
	// Started is when the agent started (the kubelet container's start).
	Started time.Time
	// MemoryLimit is a running container's memory limit (its cgroup's,
	// else its spec's) and whether it has one.
	MemoryLimit func(id string, spec *corev1.Container) (uint64, bool)
	// ImageFs is the runtime's image filesystem usage; nil when unknown.
	ImageFs *runtimeapi.FilesystemUsage
}

// applyKernel completes the Summary with the kernel's figures: pressure
// (PSI) everywhere, the containers' memory available under their limits,
// the pods' from their cgroups and process counts, the node's memory
// details, start time, network and runtime filesystems, the system
// containers; and the filesystems' capacities and inodes where only the
// usage was known.
func applyKernel(out *statsv1alpha1.Summary, pods []*corev1.Pod, containers []*runtimeapi.Container, k Kernel, now time.Time, usage deps.MachineUsage) {
	t := metav1.NewTime(now)
	idByName := map[string]map[string]string{} // pod UID → container name → running ID
	for _, c := range containers {
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		uid := c.GetLabels()[podstate.LabelPodUID]
		if idByName[uid] == nil {
			idByName[uid] = map[string]string{}
		}
		idByName[uid][c.GetLabels()[podstate.LabelContainerName]] = c.GetId()
	}
	specs := map[string]*corev1.Pod{}
	for _, p := range pods {
		specs[string(p.UID)] = p
	}
	for i := range out.Pods {
		ps := &out.Pods[i]
		uid := ps.PodRef.UID
		var procs uint64
		for j := range ps.Containers {
			cs := &ps.Containers[j]
			id := idByName[uid][cs.Name]
			cg, ok := k.Containers[id]
			if ok {
				applyCgroup(&cs.CPU, &cs.Memory, &cs.IO, cg, k.CPU["c/"+id], t)
				procs += cg.Processes.Processes
			}
			if k.MemoryLimit != nil && cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
				if l, limited := k.MemoryLimit(id, containerSpecOf(specs[uid], cs.Name)); limited {
					cs.Memory.AvailableBytes = ptr(subSat(l, *cs.Memory.WorkingSetBytes))
				}
			}
			cs.Rootfs = withFsCapacity(cs.Rootfs, imageFs(usage))
		}
		if cg, ok := k.Pods[uid]; ok {
			applyCgroup(&ps.CPU, &ps.Memory, &ps.IO, cg, k.CPU["p/"+uid], t)
			if l := cg.Spec.MemoryLimit; l != deps.Unlimited && l != 0 && ps.Memory != nil && ps.Memory.WorkingSetBytes != nil {
				ps.Memory.AvailableBytes = ptr(subSat(l, *ps.Memory.WorkingSetBytes))
			}
		}
		if ps.ProcessStats == nil && len(k.Containers) > 0 {
			ps.ProcessStats = &statsv1alpha1.ProcessStats{ProcessCount: ptr(procs)}
		}
		ps.EphemeralStorage = withFsCapacity(ps.EphemeralStorage, nodeFs(usage))
	}
	applyNode(&out.Node, k, t, usage)
}

// applyNode completes the node's part from the root cgroup and the
// system containers.
func applyNode(ns *statsv1alpha1.NodeStats, k Kernel, t metav1.Time, usage deps.MachineUsage) {
	root, ok := k.System[""]
	if !ok {
		return
	}
	ns.StartTime = metav1.NewTime(root.Created)
	if ns.Memory != nil {
		ns.Memory.RSSBytes = ptr(root.Memory.RSS)
		ns.Memory.PageFaults = ptr(root.Memory.PageFaults)
		ns.Memory.MajorPageFaults = ptr(root.Memory.MajorPageFaults)
	}
	if root.PSI != nil {
		if ns.CPU != nil {
			ns.CPU.PSI = psiStats(root.PSI.CPU)
		}
		if ns.Memory != nil {
			ns.Memory.PSI = psiStats(root.PSI.Memory)
		}
		ns.IO = &statsv1alpha1.IOStats{Time: t, PSI: psiStats(root.PSI.IO)}
	}
	if root.Network != nil {
		n := &statsv1alpha1.NetworkStats{Time: t, Interfaces: []statsv1alpha1.InterfaceStats{}}
		for _, i := range root.Network {
			is := statsv1alpha1.InterfaceStats{Name: i.Name, RxBytes: ptr(i.RxBytes), RxErrors: ptr(i.RxErrors), TxBytes: ptr(i.TxBytes), TxErrors: ptr(i.TxErrors)}
			n.Interfaces = append(n.Interfaces, is)
			if i.Name == "eth0" {
				n.InterfaceStats = is
			}
		}
		ns.Network = n
	}
	if k.ImageFs != nil {
		fs := &statsv1alpha1.FsStats{Time: t, UsedBytes: u64p(k.ImageFs.GetUsedBytes()), InodesUsed: u64p(k.ImageFs.GetInodesUsed())}
		fs = withFsCapacity(fs, imageFs(usage))
		cfs := *fs
		ns.Runtime = &statsv1alpha1.RuntimeStats{ImageFs: fs, ContainerFs: &cfs}
	}
	for _, name := range []string{statsv1alpha1.SystemContainerKubelet, statsv1alpha1.SystemContainerRuntime, statsv1alpha1.SystemContainerPods, statsv1alpha1.SystemContainerMisc} {
		cg, ok := k.System[name]
		if !ok {
			continue
		}
		cs := statsv1alpha1.ContainerStats{Name: name, StartTime: metav1.NewTime(cg.Created)}
		if name == statsv1alpha1.SystemContainerKubelet && !k.Started.IsZero() {
			cs.StartTime = metav1.NewTime(k.Started)
		}
		applyCgroup(&cs.CPU, &cs.Memory, &cs.IO, cg, k.CPU["sys/"+name], t)
		if cs.CPU != nil && cs.CPU.UsageNanoCores == nil {
			cs.CPU.UsageNanoCores = ptr(uint64(0)) // no rate yet: the first sample
		}
		if l := cg.Spec.MemoryLimit; l != deps.Unlimited && l != 0 && cs.Memory != nil && name == statsv1alpha1.SystemContainerPods {
			cs.Memory.AvailableBytes = ptr(subSat(l, *cs.Memory.WorkingSetBytes))
		}
		ns.SystemContainers = append(ns.SystemContainers, cs)
	}
}

// applyCgroup sets a container's, pod's or system container's CPU,
// memory and I/O pressure from its cgroup: the CPU (with its rate) and
// memory where the runtime gave none, the pressure always.
func applyCgroup(cpu **statsv1alpha1.CPUStats, mem **statsv1alpha1.MemoryStats, io **statsv1alpha1.IOStats, cg deps.CgroupStats, usage *runtimeapi.CpuUsage, t metav1.Time) {
	if *cpu == nil && usage != nil {
		*cpu = cpuStats(usage)
	}
	if *mem == nil {
		m := cg.Memory
		*mem = &statsv1alpha1.MemoryStats{Time: t, UsageBytes: ptr(m.Usage), WorkingSetBytes: ptr(m.WorkingSet), RSSBytes: ptr(m.RSS),
			PageFaults: ptr(m.PageFaults), MajorPageFaults: ptr(m.MajorPageFaults)}
	} else {
		if (*mem).RSSBytes == nil {
			(*mem).RSSBytes = ptr(cg.Memory.RSS)
		}
		if (*mem).PageFaults == nil {
			(*mem).PageFaults = ptr(cg.Memory.PageFaults)
			(*mem).MajorPageFaults = ptr(cg.Memory.MajorPageFaults)
		}
	}
	if cg.PSI == nil {
		return
	}
	if *cpu != nil {
		(*cpu).PSI = psiStats(cg.PSI.CPU)
	}
	(*mem).PSI = psiStats(cg.PSI.Memory)
	*io = &statsv1alpha1.IOStats{Time: t, PSI: psiStats(cg.PSI.IO)}
}

// psiStats converts one resource's pressure.
func psiStats(p deps.PSI) *statsv1alpha1.PSIStats {
	conv := func(d deps.PSIData) statsv1alpha1.PSIData {
		return statsv1alpha1.PSIData{Total: d.Total, Avg10: d.Avg10, Avg60: d.Avg60, Avg300: d.Avg300}
	}
	return &statsv1alpha1.PSIStats{Some: conv(p.Some), Full: conv(p.Full)}
}

// fsCapacity is a filesystem's size and inodes.
type fsCapacity struct{ capacity, available, inodes, inodesFree uint64 }

func nodeFs(u deps.MachineUsage) fsCapacity {
	return fsCapacity{u.NodeFSCapacityBytes, u.NodeFSAvailableBytes, u.NodeFSInodes, u.NodeFSInodesFree}
}

// imageFs is the image filesystem's (the node's when it has none of its
// own), where containers' writable layers live.
func imageFs(u deps.MachineUsage) fsCapacity {
	if u.ImageFSCapacityBytes > 0 {
		return fsCapacity{u.ImageFSCapacityBytes, u.ImageFSAvailableBytes, u.ImageFSInodes, u.ImageFSInodesFree}
	}
	return nodeFs(u)
}

// withFsCapacity fills a usage's capacity, free space and inodes where
// they are unset and known; nil stays nil.
func withFsCapacity(fs *statsv1alpha1.FsStats, c fsCapacity) *statsv1alpha1.FsStats {
	if fs == nil {
		return nil
	}
	if fs.CapacityBytes == nil && c.capacity > 0 {
		fs.CapacityBytes, fs.AvailableBytes = ptr(c.capacity), ptr(c.available)
	}
	if fs.Inodes == nil && c.inodes > 0 {
		fs.Inodes, fs.InodesFree = ptr(c.inodes), ptr(c.inodesFree)
	}
	return fs
}

// containerSpecOf is pod's regular or init container of that name.
func containerSpecOf(pod *corev1.Pod, name string) *corev1.Container {
	if pod == nil {
		return nil
	}
	for _, l := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range l {
			if l[i].Name == name {
				return &l[i]
			}
		}
	}
	return nil
}
