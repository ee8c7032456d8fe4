package statssummary

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

var (
	t0   = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	now  = t0.Add(time.Hour)
	tNow = metav1.NewTime(now)
)

// at is t0+s as CRI nanoseconds.
func at(s int) int64 { return t0.Add(time.Duration(s) * time.Second).UnixNano() }

// mt is t0+s as a metav1.Time.
func mt(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }

func u(v uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: v} }

func p(v uint64) *uint64 { return &v }

func pi(v int64) *int64 { return &v }

func pod(ns, name, uid string, startSec int) *corev1.Pod {
	st := mt(startSec)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Status:     corev1.PodStatus{StartTime: &st},
	}
}

func labels(uid, container string) map[string]string {
	l := map[string]string{podstate.LabelPodUID: uid}
	if container != "" {
		l[podstate.LabelContainerName] = container
	}
	return l
}

func ctr(id, sandbox, uid, name string, state runtimeapi.ContainerState, createdSec int) *runtimeapi.Container {
	return &runtimeapi.Container{
		Id: id, PodSandboxId: sandbox, State: state, CreatedAt: at(createdSec),
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Labels:   labels(uid, name),
	}
}

func cstats(id string, cpuNano, cpuTotal, ws uint64, disk uint64) *runtimeapi.ContainerStats {
	return &runtimeapi.ContainerStats{
		Attributes:    &runtimeapi.ContainerAttributes{Id: id},
		Cpu:           &runtimeapi.CpuUsage{Timestamp: at(100), UsageNanoCores: u(cpuNano), UsageCoreNanoSeconds: u(cpuTotal)},
		Memory:        &runtimeapi.MemoryUsage{Timestamp: at(100), WorkingSetBytes: u(ws), UsageBytes: u(ws + 1)},
		WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: at(101), UsedBytes: u(disk), InodesUsed: u(3)},
	}
}

func sbstats(id, uid string) *runtimeapi.PodSandboxStats {
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{Id: id, Metadata: &runtimeapi.PodSandboxMetadata{Uid: uid}},
		Linux: &runtimeapi.LinuxPodSandboxStats{
			Cpu:    &runtimeapi.CpuUsage{Timestamp: at(200), UsageNanoCores: u(7), UsageCoreNanoSeconds: u(70)},
			Memory: &runtimeapi.MemoryUsage{Timestamp: at(200), WorkingSetBytes: u(900), UsageBytes: u(1000), AvailableBytes: u(5)},
			Network: &runtimeapi.NetworkUsage{
				Timestamp:        at(200),
				DefaultInterface: &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: u(10), TxBytes: u(20)},
				Interfaces:       []*runtimeapi.NetworkInterfaceUsage{{Name: "eth0", RxBytes: u(10), TxBytes: u(20)}},
			},
			Process: &runtimeapi.ProcessUsage{Timestamp: at(200), ProcessCount: u(4)},
		},
	}
}

// wantContainer is the converted form of ctr+cstats.
func wantContainer(name string, createdSec int, cpuNano, cpuTotal, ws, disk uint64) statsv1alpha1.ContainerStats {
	return statsv1alpha1.ContainerStats{
		Name:      name,
		StartTime: mt(createdSec),
		CPU:       &statsv1alpha1.CPUStats{Time: mt(100), UsageNanoCores: p(cpuNano), UsageCoreNanoSeconds: p(cpuTotal)},
		Memory:    &statsv1alpha1.MemoryStats{Time: mt(100), WorkingSetBytes: p(ws), UsageBytes: p(ws + 1)},
		Rootfs:    &statsv1alpha1.FsStats{Time: mt(101), UsedBytes: p(disk), InodesUsed: p(3)},
	}
}

var (
	machine = deps.MachineInfo{CPUs: 4, MemoryBytes: 8 << 30, MaxPIDs: 4096}
	usage   = deps.MachineUsage{
		MemoryAvailableBytes: 6 << 30,
		NodeFSCapacityBytes:  100 << 30, NodeFSAvailableBytes: 40 << 30,
		NodeFSInodes: 1000, NodeFSInodesFree: 600,
		PIDsAvailable: 4000,
	}
)

// wantNode is the node part for machine/usage with the given CPU sums.
func wantNode(cpuNano, cpuTotal uint64) statsv1alpha1.NodeStats {
	return statsv1alpha1.NodeStats{
		NodeName: "node-a",
		CPU:      &statsv1alpha1.CPUStats{Time: tNow, UsageNanoCores: p(cpuNano), UsageCoreNanoSeconds: p(cpuTotal)},
		Memory: &statsv1alpha1.MemoryStats{
			Time: tNow, AvailableBytes: p(6 << 30), UsageBytes: p(2 << 30), WorkingSetBytes: p(2 << 30),
		},
		Fs: &statsv1alpha1.FsStats{
			Time: tNow, CapacityBytes: p(100 << 30), AvailableBytes: p(40 << 30), UsedBytes: p(60 << 30),
			Inodes: p(1000), InodesFree: p(600), InodesUsed: p(400),
		},
		Rlimit: &statsv1alpha1.RlimitStats{Time: tNow, MaxPID: pi(4096), NumOfRunningProcesses: pi(96)},
	}
}

func TestBuild(t *testing.T) {
	running := runtimeapi.ContainerState_CONTAINER_RUNNING
	exited := runtimeapi.ContainerState_CONTAINER_EXITED

	tests := []struct {
		name       string
		machine    deps.MachineInfo
		usage      deps.MachineUsage
		pods       []*corev1.Pod
		sandboxes  []*runtimeapi.PodSandboxStats
		stats      []*runtimeapi.ContainerStats
		containers []*runtimeapi.Container
		want       *statsv1alpha1.Summary
	}{
		{
			name:    "node only",
			machine: machine, usage: usage,
			want: &statsv1alpha1.Summary{Node: wantNode(0, 0), Pods: []statsv1alpha1.PodStats{}},
		},
		{
			name: "unknown machine: no memory, fs or rlimit",
			want: &statsv1alpha1.Summary{
				Node: statsv1alpha1.NodeStats{NodeName: "node-a", CPU: &statsv1alpha1.CPUStats{Time: tNow, UsageNanoCores: p(0), UsageCoreNanoSeconds: p(0)}},
				Pods: []statsv1alpha1.PodStats{},
			},
		},
		{
			name:    "memory available above capacity saturates at zero used",
			machine: deps.MachineInfo{MemoryBytes: 100},
			usage:   deps.MachineUsage{MemoryAvailableBytes: 150},
			want: &statsv1alpha1.Summary{
				Node: statsv1alpha1.NodeStats{
					NodeName: "node-a",
					CPU:      &statsv1alpha1.CPUStats{Time: tNow, UsageNanoCores: p(0), UsageCoreNanoSeconds: p(0)},
					Memory:   &statsv1alpha1.MemoryStats{Time: tNow, AvailableBytes: p(150), UsageBytes: p(0), WorkingSetBytes: p(0)},
				},
				Pods: []statsv1alpha1.PodStats{},
			},
		},
		{
			name:    "pod-level stats from the sandbox; exited instances dropped; containers sorted by name",
			machine: machine, usage: usage,
			pods:      []*corev1.Pod{pod("default", "web", "uid-1", 5)},
			sandboxes: []*runtimeapi.PodSandboxStats{sbstats("sb1", "uid-1")},
			stats: []*runtimeapi.ContainerStats{
				cstats("c-side", 2, 20, 200, 2000),
				cstats("c-app", 1, 10, 100, 1000),
				cstats("c-app-old", 9, 90, 900, 9000),
			},
			containers: []*runtimeapi.Container{
				ctr("c-side", "sb1", "uid-1", "sidecar", running, 20),
				ctr("c-app-old", "sb1", "uid-1", "app", exited, 10),
				ctr("c-app", "sb1", "uid-1", "app", running, 30),
			},
			want: &statsv1alpha1.Summary{
				Node: wantNode(7, 70),
				Pods: []statsv1alpha1.PodStats{{
					PodRef:    statsv1alpha1.PodReference{Name: "web", Namespace: "default", UID: "uid-1"},
					StartTime: mt(5),
					Containers: []statsv1alpha1.ContainerStats{
						wantContainer("app", 30, 1, 10, 100, 1000),
						wantContainer("sidecar", 20, 2, 20, 200, 2000),
					},
					CPU:    &statsv1alpha1.CPUStats{Time: mt(200), UsageNanoCores: p(7), UsageCoreNanoSeconds: p(70)},
					Memory: &statsv1alpha1.MemoryStats{Time: mt(200), WorkingSetBytes: p(900), UsageBytes: p(1000), AvailableBytes: p(5)},
					Network: &statsv1alpha1.NetworkStats{
						Time:           mt(200),
						InterfaceStats: statsv1alpha1.InterfaceStats{Name: "eth0", RxBytes: p(10), TxBytes: p(20)},
						Interfaces:     []statsv1alpha1.InterfaceStats{{Name: "eth0", RxBytes: p(10), TxBytes: p(20)}},
					},
					ProcessStats:     &statsv1alpha1.ProcessStats{ProcessCount: p(4)},
					EphemeralStorage: &statsv1alpha1.FsStats{Time: mt(101), UsedBytes: p(3000), InodesUsed: p(6)},
				}},
			},
		},
		{
			name:    "no sandbox stats: pod CPU and memory are the containers' sums",
			machine: machine, usage: usage,
			pods: []*corev1.Pod{pod("default", "web", "uid-1", 5)},
			stats: []*runtimeapi.ContainerStats{
				cstats("c-side", 2, 20, 200, 2000),
				cstats("c-app", 1, 10, 100, 1000),
			},
			containers: []*runtimeapi.Container{
				ctr("c-side", "sb1", "uid-1", "sidecar", running, 20),
				ctr("c-app", "sb1", "uid-1", "app", running, 30),
			},
			want: &statsv1alpha1.Summary{
				Node: wantNode(3, 30),
				Pods: []statsv1alpha1.PodStats{{
					PodRef:    statsv1alpha1.PodReference{Name: "web", Namespace: "default", UID: "uid-1"},
					StartTime: mt(5),
					Containers: []statsv1alpha1.ContainerStats{
						wantContainer("app", 30, 1, 10, 100, 1000),
						wantContainer("sidecar", 20, 2, 20, 200, 2000),
					},
					CPU:              &statsv1alpha1.CPUStats{Time: mt(100), UsageNanoCores: p(3), UsageCoreNanoSeconds: p(30)},
					Memory:           &statsv1alpha1.MemoryStats{Time: mt(100), WorkingSetBytes: p(300), UsageBytes: p(302)},
					EphemeralStorage: &statsv1alpha1.FsStats{Time: mt(101), UsedBytes: p(3000), InodesUsed: p(6)},
				}},
			},
		},
		{
			name:    "pods keep their order; unknown pods are skipped; a pod with only exited containers has no usage",
			machine: machine, usage: usage,
			pods: []*corev1.Pod{
				pod("ns-b", "done", "uid-2", 1),
				pod("ns-a", "pending", "uid-3", 2),
				pod("ns-a", "web", "uid-1", 3),
			},
			stats: []*runtimeapi.ContainerStats{cstats("c-app", 1, 10, 100, 1000)},
			containers: []*runtimeapi.Container{
				ctr("c-app", "sb1", "uid-1", "app", running, 30),
				ctr("c-done", "sb2", "uid-2", "job", exited, 15),
			},
			want: &statsv1alpha1.Summary{
				Node: wantNode(1, 10),
				Pods: []statsv1alpha1.PodStats{
					{
						PodRef:     statsv1alpha1.PodReference{Name: "done", Namespace: "ns-b", UID: "uid-2"},
						StartTime:  mt(1),
						Containers: []statsv1alpha1.ContainerStats{},
					},
					{
						PodRef:           statsv1alpha1.PodReference{Name: "web", Namespace: "ns-a", UID: "uid-1"},
						StartTime:        mt(3),
						Containers:       []statsv1alpha1.ContainerStats{wantContainer("app", 30, 1, 10, 100, 1000)},
						CPU:              &statsv1alpha1.CPUStats{Time: mt(100), UsageNanoCores: p(1), UsageCoreNanoSeconds: p(10)},
						Memory:           &statsv1alpha1.MemoryStats{Time: mt(100), WorkingSetBytes: p(100), UsageBytes: p(101)},
						EphemeralStorage: &statsv1alpha1.FsStats{Time: mt(101), UsedBytes: p(1000), InodesUsed: p(3)},
					},
				},
			},
		},
		{
			name:    "name from metadata without the label; a running container without stats has only name and start",
			machine: machine, usage: usage,
			pods: []*corev1.Pod{pod("default", "web", "uid-1", 5)},
			containers: []*runtimeapi.Container{{
				Id: "c1", PodSandboxId: "sb1", State: running, CreatedAt: at(40),
				Metadata: &runtimeapi.ContainerMetadata{Name: "from-meta"},
				Labels:   labels("uid-1", ""),
			}},
			want: &statsv1alpha1.Summary{
				Node: wantNode(0, 0),
				Pods: []statsv1alpha1.PodStats{{
					PodRef:     statsv1alpha1.PodReference{Name: "web", Namespace: "default", UID: "uid-1"},
					StartTime:  mt(5),
					Containers: []statsv1alpha1.ContainerStats{{Name: "from-meta", StartTime: mt(40)}},
				}},
			},
		},
		{
			name:    "two sandboxes: the one holding the running containers wins; sandbox found by label",
			machine: machine, usage: usage,
			pods: []*corev1.Pod{pod("default", "web", "uid-1", 5)},
			sandboxes: func() []*runtimeapi.PodSandboxStats {
				old := sbstats("sb-old", "uid-1")
				old.Linux.Cpu.UsageNanoCores = u(999)
				cur := sbstats("sb-new", "")
				cur.Attributes.Labels = labels("uid-1", "")
				cur.Linux.Network = nil
				cur.Linux.Process = nil
				return []*runtimeapi.PodSandboxStats{cur, old}
			}(),
			stats:      []*runtimeapi.ContainerStats{cstats("c-app", 1, 10, 100, 1000)},
			containers: []*runtimeapi.Container{ctr("c-app", "sb-new", "uid-1", "app", running, 30)},
			want: &statsv1alpha1.Summary{
				Node: wantNode(7, 70),
				Pods: []statsv1alpha1.PodStats{{
					PodRef:           statsv1alpha1.PodReference{Name: "web", Namespace: "default", UID: "uid-1"},
					StartTime:        mt(5),
					Containers:       []statsv1alpha1.ContainerStats{wantContainer("app", 30, 1, 10, 100, 1000)},
					CPU:              &statsv1alpha1.CPUStats{Time: mt(200), UsageNanoCores: p(7), UsageCoreNanoSeconds: p(70)},
					Memory:           &statsv1alpha1.MemoryStats{Time: mt(200), WorkingSetBytes: p(900), UsageBytes: p(1000), AvailableBytes: p(5)},
					EphemeralStorage: &statsv1alpha1.FsStats{Time: mt(101), UsedBytes: p(1000), InodesUsed: p(3)},
				}},
			},
		},
		{
			name:    "a pod known only by a sandbox without containers",
			machine: machine, usage: usage,
			pods:      []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "new", UID: "uid-9"}}},
			sandboxes: []*runtimeapi.PodSandboxStats{{Attributes: &runtimeapi.PodSandboxAttributes{Id: "sb9", Metadata: &runtimeapi.PodSandboxMetadata{Uid: "uid-9"}}}},
			want: &statsv1alpha1.Summary{
				Node: wantNode(0, 0),
				Pods: []statsv1alpha1.PodStats{{
					PodRef:     statsv1alpha1.PodReference{Name: "new", Namespace: "default", UID: "uid-9"},
					Containers: []statsv1alpha1.ContainerStats{},
				}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Build("node-a", now, tc.machine, tc.usage, tc.pods, tc.sandboxes, tc.stats, tc.containers, LocalUsage{})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Build (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddSaturates(t *testing.T) {
	got := addp(p(^uint64(0)-1), p(5))
	if *got != ^uint64(0) {
		t.Errorf("addp overflow: got %d, want max uint64", *got)
	}
	if got := addp(nil, nil); got != nil {
		t.Errorf("addp(nil, nil) = %v, want nil", *got)
	}
}

// The agent's own measurements: a running container gets its Logs on the
// node filesystem, the pod its VolumeStats in spec order, and its
// ephemeral storage adds the logs and the local ephemeral volumes (an
// emptyDir on disk, a configMap) to the writable layers, not a secret or
// a memory-backed emptyDir; a container not running reports no logs. The
// container's swap (from the runtime) makes the pod's.
func TestBuildLocalUsage(t *testing.T) {
	pd := pod("default", "web", "uid-1", 50)
	pd.Spec.Volumes = []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "ram", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}},
	}
	containers := []*runtimeapi.Container{
		ctr("c1", "s1", "uid-1", "app", runtimeapi.ContainerState_CONTAINER_RUNNING, 60),
		ctr("c0", "s1", "uid-1", "init", runtimeapi.ContainerState_CONTAINER_EXITED, 55),
	}
	local := LocalUsage{
		Volumes: map[types.UID]map[string]FsUsage{"uid-1": {
			"scratch": {UsedBytes: 1000, InodesUsed: 2}, "ram": {UsedBytes: 50, InodesUsed: 1},
			"conf": {UsedBytes: 7, InodesUsed: 5}, "creds": {UsedBytes: 9, InodesUsed: 4},
		}},
		Logs: map[types.UID]map[string]FsUsage{"uid-1": {"app": {UsedBytes: 300, InodesUsed: 2}, "init": {UsedBytes: 40, InodesUsed: 2}}},
	}
	withSwap := cstats("c1", 1, 2, 3, 4000)
	withSwap.Swap = &runtimeapi.SwapUsage{Timestamp: at(100), SwapUsageBytes: u(70), SwapAvailableBytes: u(30)}
	got := Build("node-a", now, machine, usage, []*corev1.Pod{pd}, nil, []*runtimeapi.ContainerStats{withSwap}, containers, local)
	onNode := func(used, inodes uint64) statsv1alpha1.FsStats {
		return statsv1alpha1.FsStats{Time: tNow, UsedBytes: p(used), InodesUsed: p(inodes),
			CapacityBytes: p(100 << 30), AvailableBytes: p(40 << 30), Inodes: p(1000), InodesFree: p(600)}
	}
	app := wantContainer("app", 60, 1, 2, 3, 4000)
	logs := onNode(300, 2)
	app.Logs = &logs
	app.Swap = &statsv1alpha1.SwapStats{Time: mt(100), SwapUsageBytes: p(70), SwapAvailableBytes: p(30)}
	ps := got.Pods[0]
	if diff := cmp.Diff(&statsv1alpha1.SwapStats{Time: mt(100), SwapUsageBytes: p(70)}, ps.Swap); diff != "" {
		t.Errorf("pod swap (-want +got):\n%s", diff)
	}
	type view struct {
		Containers []statsv1alpha1.ContainerStats
		Volumes    []statsv1alpha1.VolumeStats
		Ephemeral  *statsv1alpha1.FsStats
	}
	want := view{
		Containers: []statsv1alpha1.ContainerStats{app},
		Volumes: []statsv1alpha1.VolumeStats{
			{Name: "scratch", FsStats: onNode(1000, 2)}, {Name: "ram", FsStats: onNode(50, 1)},
			{Name: "conf", FsStats: onNode(7, 5)}, {Name: "creds", FsStats: onNode(9, 4)},
		},
		// 4000 rootfs + 300 logs + 1000 scratch + 7 conf.
		Ephemeral: &statsv1alpha1.FsStats{Time: tNow, UsedBytes: p(5307), InodesUsed: p(3 + 2 + 2 + 5)},
	}
	if diff := cmp.Diff(want, view{ps.Containers, ps.VolumeStats, ps.EphemeralStorage}); diff != "" {
		t.Errorf("pod (-want +got):\n%s", diff)
	}
}

// containerd 1.6 reports a sandbox's network without a timestamp: the
// Summary stamps it with the sample's time rather than the zero time.
func TestBuildNetworkWithoutTimestamp(t *testing.T) {
	sb := sbstats("s1", "uid-1")
	sb.Linux.Network.Timestamp = 0
	got := Build("node-a", now, machine, usage, []*corev1.Pod{pod("default", "web", "uid-1", 50)}, []*runtimeapi.PodSandboxStats{sb}, nil, nil, LocalUsage{})
	if len(got.Pods) != 1 || got.Pods[0].Network == nil {
		t.Fatalf("pods: %+v", got.Pods)
	}
	if diff := cmp.Diff(tNow, got.Pods[0].Network.Time); diff != "" {
		t.Errorf("network time (-want +got):\n%s", diff)
	}
}

// containerd 1.6 reports a sandbox's default interface without the list of
// interfaces: the Summary lists it among the pod's interfaces too, as the
// kubelet does (the node suite's summary spec wants the list).
func TestBuildNetworkDefaultInterfaceListed(t *testing.T) {
	sb := sbstats("s1", "uid-1")
	sb.Linux.Network.Interfaces = nil
	got := Build("node-a", now, machine, usage, []*corev1.Pod{pod("default", "web", "uid-1", 50)}, []*runtimeapi.PodSandboxStats{sb}, nil, nil, LocalUsage{})
	if len(got.Pods) != 1 || got.Pods[0].Network == nil {
		t.Fatalf("pods: %+v", got.Pods)
	}
	n := got.Pods[0].Network
	if diff := cmp.Diff([]statsv1alpha1.InterfaceStats{n.InterfaceStats}, n.Interfaces); diff != "" || n.InterfaceStats.Name == "" {
		t.Errorf("interfaces (-want +got), default %q:\n%s", n.InterfaceStats.Name, diff)
	}
}
