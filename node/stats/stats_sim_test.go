package stats_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		Labels: map[string]string{"io.kubernetes.pod.uid": "uid-1"}}
	var sb string
	k.Go("setup", func() {
		var err error
		if sb, err = rt.RunPodSandbox(ctx, sbCfg, ""); err != nil {
			t.Error(err)
			return
		}
		id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox:latest"},
			Labels: map[string]string{"io.kubernetes.pod.uid": "uid-1", "io.kubernetes.container.name": "app"},
			Envs:   []*runtimeapi.KeyValue{{Key: "FAKECRI_MEMORY", Value: []byte("300Mi")}, {Key: "FAKECRI_DISK", Value: []byte("1Gi")}},
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
	if s.ImageFs == nil || s.ImageFs.GetUsedBytes().GetValue() == 0 {
		t.Errorf("no image filesystem usage: %+v", s.ImageFs)
	}
}
