package statssummary

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/real/cgstats/cgstatstest"
)

// between reports v within [lo, hi] (nil: not).
func between(v *uint64, lo, hi float64) bool {
	return v != nil && float64(*v) >= lo && float64(*v) <= hi
}

// The node suite's summary_test.go bounds (v1.37.2) that the kernel's
// figures decide, on a node running its pod stats-busybox-0 (80M limit)
// whose cgroups node/real/cgstats reads, on cgroup v2 and on a v1 hybrid
// host: pressure everywhere (all zero on v1, as upstream reports it),
// the container's memory available under the cgroup's page-rounded
// limit, the pod's from its cgroup, its process count, the filesystems'
// capacities and inodes, the node's RSS, page faults, start time,
// network and runtime filesystems, and the system containers (only the
// pods' limited).
func TestKernelCompletesTheSummary(t *testing.T) {
	for _, l := range cgstatstest.Layouts {
		t.Run(l.String(), func(t *testing.T) { kernelCompletesTheSummary(t, l) })
	}
}

// hostKernel is the suite's container ("c1"), pod ("uid-0") and the
// system cgroups of a host of layout l as node/real/cgstats reads them
// (cgstatstest's figures, which its tests hold the reader to), with
// their CPU usages as the stats provider makes them.
func hostKernel(t *testing.T, l cgstatstest.Layout) *Kernel {
	f := cgstatstest.New(t, l).Want()
	k := &Kernel{Containers: map[string]deps.CgroupStats{"c1": f.Containers[cgstatstest.ContainerID]}, Pods: map[string]deps.CgroupStats{"uid-0": f.Pods[cgstatstest.PodUID]},
		System: f.System, CPU: map[string]*runtimeapi.CpuUsage{}}
	for name, s := range f.System {
		k.CPU["sys/"+name] = &runtimeapi.CpuUsage{Timestamp: now.UnixNano(), UsageCoreNanoSeconds: u(s.CPU.UsageNanos)}
	}
	k.CPU["sys/kubelet"].UsageNanoCores = u(2e7)
	return k
}

func kernelCompletesTheSummary(t *testing.T, l cgstatstest.Layout) {
	const mb, kb = 1e6, 1e3
	// On v1 the spec bounds the container's and the pod's page faults
	// at 1e6 (v1's are the cgroup's own, v2's recursive).
	pfMax := 1e9
	if l == cgstatstest.V1Hybrid {
		pfMax = 1e6
	}
	pd := pod("ns", "stats-busybox-0", "uid-0", 0)
	pd.Spec.Containers = []corev1.Container{{Name: "busybox-container",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("80M")}}}}
	c := ctr("c1", "s1", "uid-0", "busybox-container", runtimeapi.ContainerState_CONTAINER_RUNNING, 3500)
	cs := cstats("c1", 2e6, 90e6, 737280, 12288)
	k := hostKernel(t, l)
	k.Started = now.Add(-time.Minute)
	k.MemoryLimit = func(id string, _ *corev1.Container) (uint64, bool) { return k8sLimit(id) }
	k.ImageFs = &runtimeapi.FilesystemUsage{UsedBytes: u(2e9), InodesUsed: u(40000)}
	wantPSI := k.Containers["c1"].PSI
	if wantPSI == nil {
		t.Fatal("no PSI read for the container")
	}
	if l == cgstatstest.V1Hybrid && *wantPSI != (deps.CgroupPSI{}) {
		t.Errorf("v1 container PSI %+v, want all zero", *wantPSI)
	}
	usage := deps.MachineUsage{MemoryAvailableBytes: 3 << 30, NodeFSCapacityBytes: 100e9, NodeFSAvailableBytes: 60e9, NodeFSInodes: 6e6, NodeFSInodesFree: 5e6}
	sum := Build("n", now, deps.MachineInfo{MemoryBytes: 4 << 30}, usage, []*corev1.Pod{pd}, nil,
		[]*runtimeapi.ContainerStats{cs}, []*runtimeapi.Container{c}, LocalUsage{Kernel: k})

	ps := sum.Pods[0]
	ct := ps.Containers[0]
	if got, want := *ct.Memory.AvailableBytes, uint64(79998976-737280); got != want {
		t.Errorf("container available %d, want the cgroup's limit less the working set, %d", got, want)
	}
	checks := []struct {
		what string
		ok   bool
	}{
		{"container CPU PSI", ct.CPU != nil && ct.CPU.PSI != nil && ct.CPU.PSI.Some.Total == wantPSI.CPU.Some.Total},
		{"container memory PSI", ct.Memory.PSI != nil},
		{"container IO PSI", ct.IO != nil && ct.IO.PSI != nil},
		{"container RSS", between(ct.Memory.RSSBytes, kb, 80*mb)},
		{"container page faults", between(ct.Memory.PageFaults, 100, pfMax)},
		{"container rootfs capacity", between(ct.Rootfs.CapacityBytes, 100*mb, 10e12) && between(ct.Rootfs.AvailableBytes, 100*mb, 10e12)},
		{"container rootfs inodes", between(ct.Rootfs.Inodes, 1e4, 1e8) && between(ct.Rootfs.InodesFree, 1e4, 1e8)},
		{"pod available", ps.Memory != nil && between(ps.Memory.AvailableBytes, kb, 80*mb)},
		{"pod memory", between(ps.Memory.UsageBytes, 10*kb, 80*mb) && between(ps.Memory.WorkingSetBytes, 10*kb, 80*mb) &&
			between(ps.Memory.RSSBytes, kb, 80*mb) && between(ps.Memory.PageFaults, 0, pfMax)},
		{"pod PSI", ps.Memory.PSI != nil && ps.CPU != nil && ps.CPU.PSI != nil && ps.IO != nil},
		{"pod processes", ps.ProcessStats != nil && between(ps.ProcessStats.ProcessCount, 1, 1e8)},
		{"pod ephemeral capacity", ps.EphemeralStorage != nil && between(ps.EphemeralStorage.CapacityBytes, 100*mb, 10e12) && between(ps.EphemeralStorage.InodesFree, 1e4, 1e8)},
		{"node start", !sum.Node.StartTime.IsZero()},
		{"node RSS and faults", between(sum.Node.Memory.RSSBytes, kb, 4<<30) && between(sum.Node.Memory.PageFaults, 1000, 1e9)},
		{"node PSI", sum.Node.CPU.PSI != nil && sum.Node.Memory.PSI != nil && sum.Node.IO != nil},
		{"node network", sum.Node.Network != nil && sum.Node.Network.Interfaces != nil && sum.Node.Network.InterfaceStats.Name == "eth0" && between(sum.Node.Network.InterfaceStats.RxBytes, mb, 100e9)},
		{"node runtime fs", sum.Node.Runtime != nil && sum.Node.Runtime.ImageFs != nil && sum.Node.Runtime.ContainerFs != nil &&
			between(sum.Node.Runtime.ImageFs.CapacityBytes, 100*mb, 10e12) && between(sum.Node.Runtime.ContainerFs.InodesFree, 1e4, 1e8)},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: out of the node suite's bounds", c.what)
		}
	}
	got := map[string]statsv1alpha1.ContainerStats{}
	for _, s := range sum.Node.SystemContainers {
		got[s.Name] = s
	}
	// The spec's lower bounds of usage, RSS and page faults by system
	// container (the pods' and misc's relaxed).
	type low struct{ usage, rss, faults float64 }
	lows := map[string]low{"kubelet": {mb, mb, 1000}, "runtime": {mb, mb, 1000}, "pods": {10 * kb, kb, 0}, "misc": {100 * kb, 100 * kb, 1000}}
	for _, name := range []string{"kubelet", "runtime", "pods", "misc"} {
		s, ok := got[name]
		lo := lows[name]
		switch {
		case !ok:
			t.Errorf("no system container %q", name)
		case s.StartTime.IsZero() || s.CPU == nil || !between(s.CPU.UsageCoreNanoSeconds, 1e7, 1e15) || s.Memory == nil ||
			!between(s.Memory.UsageBytes, lo.usage, 4<<30) || !between(s.Memory.RSSBytes, lo.rss, 4<<30) || !between(s.Memory.PageFaults, lo.faults, 1e9) ||
			s.CPU.PSI == nil || s.Memory.PSI == nil || s.Rootfs != nil || s.Logs != nil:
			t.Errorf("system container %q out of the node suite's bounds: %+v", name, s)
		case (name == "pods") != (s.Memory.AvailableBytes != nil):
			t.Errorf("system container %q: available %v, want it only for pods (the others are not limited)", name, s.Memory.AvailableBytes)
		}
	}
	if !got["kubelet"].StartTime.Time.Equal(now.Add(-time.Minute)) {
		t.Errorf("kubelet start %v, want the agent's", got["kubelet"].StartTime)
	}
}

// k8sLimit is the fixture's cgroup limit of c1.
func k8sLimit(id string) (uint64, bool) { return 79998976, id == "c1" }
