package stats_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/stats"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

type machine struct{ rt *fakecri.Runtime }

func (m machine) Info(context.Context) (deps.MachineInfo, error) {
	return deps.MachineInfo{MemoryBytes: m.rt.NodeUsage().MemoryCapacity, MaxPIDs: 1000}, nil
}

func (m machine) Usage(context.Context) (deps.MachineUsage, error) {
	u := m.rt.NodeUsage()
	return deps.MachineUsage{MemoryAvailableBytes: u.MemoryAvailable, NodeFSCapacityBytes: u.Nodefs.Capacity, NodeFSAvailableBytes: u.Nodefs.Available}, nil
}

// busyMachine adds a node CPU counter that runs at 1.5 cores.
type busyMachine struct {
	machine
	now func() time.Time
}

func (m busyMachine) Usage(ctx context.Context) (deps.MachineUsage, error) {
	u, err := m.machine.Usage(ctx)
	u.CPUUsageCoreNanoSeconds = uint64(m.now().Sub(time.Unix(0, 0))) * 3 / 2
	return u, err
}

// A sample taken on the clock holds the runtime's stats and the machine's
// usage of one instant; Latest keeps it, and its Summary reports the pod's
// working set and writable layer.
func TestProviderSamplesOnTheClock(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	rt := fakecri.New(fakecri.Config{Clock: k, Rand: k.Rand(), Files: memfs.New(),
		NewSignal: func(n string) fakecri.Signal { return k.NewSignal(n) }})
	d := k.Deps()
	p := stats.New(d.Core, stats.Ports{Runtime: rt, Images: rt, Machine: machine{rt}}, stats.Config{})
	if _, ok := p.Latest(); ok {
		t.Fatal("a sample before any was taken")
	}
	ctx := context.Background()
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"},
		Labels: map[string]string{"io.kubernetes.pod.uid": "uid-1"}, Annotations: map[string]string{"kubernetes.io/config.seen": "now"}}
	var sb string
	k.Go("setup", func() {
		var err error
		if sb, err = rt.RunPodSandbox(ctx, sbCfg, ""); err != nil {
			t.Error(err)
			return
		}
		id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox:latest"},
			Labels:      map[string]string{"io.kubernetes.pod.uid": "uid-1", "io.kubernetes.container.name": "app"},
			Annotations: map[string]string{"io.kubernetes.container.restartCount": "0"},
			Envs:        []*runtimeapi.KeyValue{{Key: "FAKECRI_MEMORY", Value: []byte("300Mi")}, {Key: "FAKECRI_DISK", Value: []byte("1Gi")}},
		}, sbCfg)
		if err != nil {
			t.Error(err)
			return
		}
		if err := rt.StartContainer(ctx, id); err != nil {
			t.Error(err)
		}
	})
	runCtx, cancel := k.WithCancel(context.Background())
	t.Cleanup(cancel)
	p.Start(runCtx)
	if err := k.RunFor(25 * time.Second); err != nil {
		t.Fatal(err)
	}
	s, ok := p.Latest()
	if !ok {
		t.Fatal("no sample after 25 s")
	}
	if got := s.Time.Sub(time.Unix(0, 0)); got%(10*time.Second) != 0 {
		t.Errorf("sample taken at %v, not on the 10 s period", got)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	sum := s.Summary("n1", []*corev1.Pod{pod})
	if len(sum.Pods) != 1 {
		t.Fatalf("summary pods: %+v", sum.Pods)
	}
	got := map[string]uint64{
		"workingSet": *sum.Pods[0].Memory.WorkingSetBytes,
		"rootfs":     *sum.Pods[0].EphemeralStorage.UsedBytes,
		"nodeAvail":  *sum.Node.Memory.AvailableBytes,
	}
	want := map[string]uint64{"workingSet": 300 << 20, "rootfs": 1 << 30, "nodeAvail": rt.NodeUsage().MemoryAvailable}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sample (-want +got):\n%s", diff)
	}
	wantRootfs := map[types.UID]map[string]stats.FsUsage{"uid-1": {"app": {UsedBytes: 1 << 30, InodesUsed: 1}}}
	if diff := cmp.Diff(wantRootfs, s.RootfsUsage); diff != "" {
		t.Errorf("rootfs usage (-want +got):\n%s", diff)
	}
	if s.ImageFs == nil || s.ImageFs.GetUsedBytes().GetValue() == 0 {
		t.Errorf("no image filesystem usage: %+v", s.ImageFs)
	}
	// The kept sample names pods and containers by their labels and
	// carries no annotations (nothing reads them; they cost memory a pod).
	type kept struct {
		Kind        string
		Labels      map[string]string
		Annotations map[string]string
	}
	var gotKept []kept
	for _, sb := range s.SandboxStats {
		gotKept = append(gotKept, kept{"sandbox stats", sb.GetAttributes().GetLabels(), sb.GetAttributes().GetAnnotations()})
	}
	for _, c := range s.ContainerStats {
		gotKept = append(gotKept, kept{"container stats", c.GetAttributes().GetLabels(), c.GetAttributes().GetAnnotations()})
	}
	for _, c := range s.Containers {
		gotKept = append(gotKept, kept{"container", c.GetLabels(), c.GetAnnotations()})
	}
	ctrLabels := map[string]string{"io.kubernetes.pod.uid": "uid-1", "io.kubernetes.container.name": "app"}
	wantKept := []kept{{"sandbox stats", sbCfg.Labels, nil}, {"container stats", ctrLabels, nil}, {"container", ctrLabels, nil}}
	if diff := cmp.Diff(wantKept, gotKept); diff != "" {
		t.Errorf("labels and annotations kept in the sample (-want +got):\n%s", diff)
	}
}

type podList []*corev1.Pod

func (l podList) ActivePods() []*corev1.Pod { return l }

// memDU is the simulator's du over an in-memory disk (as sim/harness's,
// without the fake containers' scripted writes).
type memDU struct{ files *memfs.FS }

func (m memDU) DirUsage(_ context.Context, dir string) (deps.DirUsage, error) {
	bytes, inodes, err := m.files.TreeUsage(dir)
	return deps.DirUsage{Bytes: bytes, Inodes: inodes}, err
}

// A sample measures the pods' emptyDir, configMap and secret volumes and
// their containers' log directories through the DiskUsage port, and takes the
// running containers' writable layers from the runtime; other volume
// kinds and containers without logs are left out, symbolic links are not
// followed.
func TestProviderMeasuresVolumesLogsAndRootfs(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	files := memfs.New()
	rt := fakecri.New(fakecri.Config{Clock: k, Rand: k.Rand(), Files: memfs.New(),
		NewSignal: func(n string) fakecri.Signal { return k.NewSignal(n) }})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app"}, {Name: "never-started"}},
			Volumes: []corev1.Volume{
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}},
			},
		},
	}
	write := func(path string, n int) {
		t.Helper()
		if err := files.MkdirAll(filepath.Dir(path)); err != nil {
			t.Fatal(err)
		}
		if err := files.CreateFile(path, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vols := "/root/pods/uid-1/volumes/"
	write(vols+"kubernetes.io~empty-dir/scratch/a", 1000)
	write(vols+"kubernetes.io~empty-dir/scratch/sub/b", 24)
	write(vols+"kubernetes.io~configmap/conf/..2026/key", 7)
	if err := files.Symlink("..2026", vols+"kubernetes.io~configmap/conf/..data"); err != nil {
		t.Fatal(err)
	}
	if err := files.Symlink("..data/key", vols+"kubernetes.io~configmap/conf/key"); err != nil {
		t.Fatal(err)
	}
	write("/logs/default_web_uid-1/app/0.log", 300)
	write("/logs/default_web_uid-1/app/1.log", 200)

	p := stats.New(k.Deps().Core, stats.Ports{Runtime: rt, Images: rt, Machine: machine{rt}, Disk: memDU{files}, Pods: podList{pod}},
		stats.Config{RootDir: "/root", PodLogsRoot: "/logs"})
	var s stats.Sample
	k.Go("sample", func() {
		var err error
		if s, err = p.Refresh(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	wantVols := map[types.UID]map[string]stats.FsUsage{"uid-1": {
		"scratch": {UsedBytes: 1024, InodesUsed: 4}, // dir, a, sub, sub/b
		"conf":    {UsedBytes: 7, InodesUsed: 5},    // dir, ..2026, its key, ..data, key
	}}
	if diff := cmp.Diff(wantVols, s.VolumeUsage); diff != "" {
		t.Errorf("volume usage (-want +got):\n%s", diff)
	}
	wantLogs := map[types.UID]map[string]stats.FsUsage{"uid-1": {"app": {UsedBytes: 500, InodesUsed: 3}}}
	if diff := cmp.Diff(wantLogs, s.LogsUsage); diff != "" {
		t.Errorf("logs usage (-want +got):\n%s", diff)
	}
}

// Against a runtime like containerd 1.6 (no sandbox stats, no CPU rate),
// the sampler on the clock still reports the pod: its CPU and memory are
// its containers' sums, and the CPU rate comes from two samples, 10 s
// apart; the first sample has none. The node's CPU is the machine's own
// counter (1.5 cores busy), its rate from two samples too.
func TestProviderRateFromTwoSamplesWithoutSandboxStats(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	rt := fakecri.New(fakecri.Config{Clock: k, Rand: k.Rand(), Files: memfs.New(), NoSandboxStats: true, NoNanoCores: true,
		NewSignal: func(n string) fakecri.Signal { return k.NewSignal(n) }})
	p := stats.New(k.Deps().Core, stats.Ports{Runtime: rt, Images: rt, Machine: busyMachine{machine{rt}, k.Now}}, stats.Config{})
	ctx := context.Background()
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"},
		Labels: map[string]string{"io.kubernetes.pod.uid": "uid-1"}}
	k.Go("setup", func() {
		sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
		if err != nil {
			t.Error(err)
			return
		}
		for _, c := range []struct{ name, cpu string }{{"app", "250m"}, {"sidecar", "50m"}} {
			id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: c.name}, Image: &runtimeapi.ImageSpec{Image: "busybox:latest"},
				Labels: map[string]string{"io.kubernetes.pod.uid": "uid-1", "io.kubernetes.container.name": c.name},
				Envs:   []*runtimeapi.KeyValue{{Key: "FAKECRI_CPU", Value: []byte(c.cpu)}, {Key: "FAKECRI_MEMORY", Value: []byte("10Mi")}},
			}, sbCfg)
			if err != nil {
				t.Error(err)
				return
			}
			if err := rt.StartContainer(ctx, id); err != nil {
				t.Error(err)
			}
		}
	})
	runCtx, cancel := k.WithCancel(context.Background())
	t.Cleanup(cancel)
	p.Start(runCtx)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	// rates are nanocores, -1 where the summary has none.
	type cpu struct {
		Containers map[string]int64
		Pod, Node  int64
	}
	val := func(v *uint64) int64 {
		if v == nil {
			return -1
		}
		return int64(*v)
	}
	rates := func() cpu {
		s, ok := p.Latest()
		if !ok {
			t.Fatal("no sample")
		}
		sum := s.Summary("n1", []*corev1.Pod{pod})
		if len(sum.Pods) != 1 || sum.Pods[0].CPU == nil {
			t.Fatalf("summary pods: %+v", sum.Pods)
		}
		out := cpu{Containers: map[string]int64{}, Pod: val(sum.Pods[0].CPU.UsageNanoCores), Node: val(sum.Node.CPU.UsageNanoCores)}
		for _, c := range sum.Pods[0].Containers {
			out.Containers[c.Name] = val(c.CPU.UsageNanoCores)
		}
		return out
	}
	// The sample at 0 s precedes the pod (but reads the node's counter);
	// the one at 10 s is the pod's first.
	if err := k.RunFor(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cpu{Containers: map[string]int64{"app": -1, "sidecar": -1}, Pod: -1, Node: 1_500_000_000}, rates()); diff != "" {
		t.Errorf("first sample (-want +got):\n%s", diff)
	}
	if err := k.RunFor(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	want := cpu{Containers: map[string]int64{"app": 250_000_000, "sidecar": 50_000_000}, Pod: 300_000_000, Node: 1_500_000_000}
	if diff := cmp.Diff(want, rates()); diff != "" {
		t.Errorf("second sample (-want +got):\n%s", diff)
	}
}

// fakeNet answers a fixed eth0 usage for every sandbox but "host".
type fakeNet struct{ calls *[]string }

func (n fakeNet) PodNetwork(_ context.Context, id string) (*runtimeapi.NetworkUsage, error) {
	*n.calls = append(*n.calls, id)
	eth0 := &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: &runtimeapi.UInt64Value{Value: 100}, TxBytes: &runtimeapi.UInt64Value{Value: 200}}
	return &runtimeapi.NetworkUsage{Timestamp: 1, DefaultInterface: eth0, Interfaces: []*runtimeapi.NetworkInterfaceUsage{eth0}}, nil
}

// Without sandbox stats, the Network port gives each ready pod sandbox's
// network, which the Summary reports for the pod (its CPU and memory stay
// the containers' sums); with sandbox stats the port is not asked.
func TestProviderNetworkWithoutSandboxStats(t *testing.T) {
	for _, noSandboxStats := range []bool{true, false} {
		k := kernel.New(kernel.Config{Seed: 1})
		rt := fakecri.New(fakecri.Config{Clock: k, Rand: k.Rand(), Files: memfs.New(), NoSandboxStats: noSandboxStats,
			NewSignal: func(n string) fakecri.Signal { return k.NewSignal(n) }})
		var calls []string
		p := stats.New(k.Deps().Core, stats.Ports{Runtime: rt, Images: rt, Machine: machine{rt}, Network: fakeNet{&calls}}, stats.Config{})
		ctx := context.Background()
		sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"},
			Labels: map[string]string{"io.kubernetes.pod.uid": "uid-1"}}
		var s stats.Sample
		k.Go("setup", func() {
			if _, err := rt.RunPodSandbox(ctx, sbCfg, ""); err != nil {
				t.Error(err)
				return
			}
			var err error
			if s, err = p.Refresh(ctx); err != nil {
				t.Error(err)
			}
		})
		if err := k.RunFor(time.Second); err != nil {
			t.Fatal(err)
		}
		k.Close()
		sum := s.Summary("n1", []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}})
		if len(sum.Pods) != 1 {
			t.Fatalf("noSandboxStats=%v: summary pods %+v", noSandboxStats, sum.Pods)
		}
		net := sum.Pods[0].Network
		switch {
		case noSandboxStats && (len(calls) != 1 || net == nil || *net.RxBytes != 100 || *net.TxBytes != 200 || len(net.Interfaces) != 1):
			t.Errorf("without sandbox stats: port asked for %v, pod network %+v; want one call and eth0 100/200", calls, net)
		case !noSandboxStats && len(calls) != 0:
			t.Errorf("with sandbox stats the network port was asked for %v", calls)
		}
	}
}

// fullNet is fakeNet that also reads every interface's full counters
// (stats.InterfaceReader), as the real node's network reader does.
type fullNet struct{ fakeNet }

func (n fullNet) PodInterfaces(_ context.Context, id string) ([]deps.NetInterface, error) {
	*n.calls = append(*n.calls, id)
	return []deps.NetInterface{{Name: "eth0", RxBytes: 100, RxPackets: 3, RxDropped: 1, TxBytes: 200, TxPackets: 4}}, nil
}

// noCgroups is a kernel reader that finds no cgroup.
type noCgroups struct{}

func (noCgroups) Containers(context.Context, []string) (map[string]deps.CgroupStats, error) {
	return nil, nil
}
func (noCgroups) Pods(context.Context, []string) (map[string]deps.CgroupStats, error) {
	return nil, nil
}
func (noCgroups) System(context.Context) (map[string]deps.CgroupStats, error) { return nil, nil }

// With sandbox stats from the runtime (containerd 1.6: bytes and errors of
// the default interface only), a node reading the kernel's figures still
// takes every interface's full counters (packets, drops) from the network
// port: the cAdvisor series need them.
func TestProviderKernelNetworkBesideSandboxStats(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	rt := fakecri.New(fakecri.Config{Clock: k, Rand: k.Rand(), Files: memfs.New(),
		NewSignal: func(n string) fakecri.Signal { return k.NewSignal(n) }})
	var calls []string
	p := stats.New(k.Deps().Core, stats.Ports{Runtime: rt, Images: rt, Machine: machine{rt}, Network: fullNet{fakeNet{&calls}}, Cgroups: noCgroups{}}, stats.Config{})
	ctx := context.Background()
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"},
		Labels: map[string]string{"io.kubernetes.pod.uid": "uid-1"}}
	var s stats.Sample
	var sbID string
	k.Go("setup", func() {
		id, err := rt.RunPodSandbox(ctx, sbCfg, "")
		if err != nil {
			t.Error(err)
			return
		}
		sbID = id
		if s, err = p.Refresh(ctx); err != nil {
			t.Error(err)
		}
	})
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	k.Close()
	if len(s.SandboxStats) == 0 {
		t.Fatalf("the runtime's sandbox stats were replaced: %+v", s.SandboxStats)
	}
	var got map[string][]deps.NetInterface
	if s.Kernel != nil {
		got = s.Kernel.Network
	}
	want := map[string][]deps.NetInterface{sbID: {{Name: "eth0", RxBytes: 100, RxPackets: 3, RxDropped: 1, TxBytes: 200, TxPackets: 4}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kernel network (-want +got):\n%s", diff)
	}
}
