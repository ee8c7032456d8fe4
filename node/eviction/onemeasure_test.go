package eviction

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/stats"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// countingDU answers from a map of paths (others do not exist) and counts
// the walks of each path.
type countingDU struct {
	mu    sync.Mutex
	usage map[string]deps.DirUsage
	walks map[string]int
}

func (c *countingDU) DirUsage(_ context.Context, path string) (deps.DirUsage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.walks[path]++
	u, ok := c.usage[path]
	if !ok {
		return deps.DirUsage{}, fmt.Errorf("disk usage of %s: %w", path, fs.ErrNotExist)
	}
	return u, nil
}

// recordingPods is the agent's side of evictions, recording evictions.
type recordingPods struct {
	pods    []*corev1.Pod
	evicted []string
}

func (r *recordingPods) ActivePods() []*corev1.Pod { return r.pods }
func (r *recordingPods) Evict(pod *corev1.Pod, _ int64, msg string, _ corev1.PodCondition) {
	r.evicted = append(r.evicted, pod.Name+": "+msg)
}
func (r *recordingPods) PodCleanedUp(types.UID) bool { return true }

// One eviction cycle measures each volume and log directory once, and the
// eviction manager (local storage limits) and the stats Summary read the
// same figures from that one measure: the pod whose emptyDir is one byte
// over its sizeLimit is evicted, the one exactly at it is not, and the
// Summary of the sample reports those very bytes.
func TestEvictionAndSummaryShareOneMeasure(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	rt := fakecri.New(fakecri.Config{Clock: k, Rand: k.Rand(), Files: memfs.New(),
		NewSignal: func(n string) fakecri.Signal { return k.NewSignal(n) }})
	limit := resource.MustParse("1Mi")
	newPod := func(name string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Name, p.Namespace, p.UID = name, "default", types.UID("uid-"+name)
		p.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
		p.Spec.Containers = []corev1.Container{{Name: "app"}}
		return p
	}
	over, at := newPod("over"), newPod("at")
	cache := func(p *corev1.Pod) string {
		return "/root/pods/" + string(p.UID) + "/volumes/kubernetes.io~empty-dir/cache"
	}
	logs := func(p *corev1.Pod) string { return "/logs/default_" + p.Name + "_" + string(p.UID) + "/app" }
	du := &countingDU{walks: map[string]int{}, usage: map[string]deps.DirUsage{
		cache(over): {Bytes: 1<<20 + 1, Inodes: 3},
		cache(at):   {Bytes: 1 << 20, Inodes: 2},
		logs(over):  {Bytes: 700, Inodes: 2},
		logs(at):    {Bytes: 300, Inodes: 2},
	}}
	pods := &recordingPods{pods: []*corev1.Pod{over, at}}
	provider := stats.New(k.Deps().Core, stats.Ports{Runtime: rt, Images: rt, Machine: fixedMachine{nodefsFree: 50}, Disk: du, Pods: pods},
		stats.Config{RootDir: "/root", PodLogsRoot: "/logs"})
	m := New(k.Deps().Core, Ports{Stats: provider, Pods: pods}, Config{}, "n1", 0)
	k.Go("cycle", func() {
		ctx := context.Background()
		for _, p := range pods.pods {
			if err := runApp(ctx, rt, p); err != nil {
				t.Error(err)
				return
			}
		}
		m.Cycle(ctx)
	})
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}

	wantWalks := map[string]int{cache(over): 1, cache(at): 1, logs(over): 1, logs(at): 1}
	if diff := cmp.Diff(wantWalks, du.walks); diff != "" {
		t.Errorf("walks of one cycle (-want +got):\n%s", diff)
	}
	wantEvicted := []string{`over: Usage of EmptyDir volume "cache" exceeds the limit "1Mi". `}
	if diff := cmp.Diff(wantEvicted, pods.evicted); diff != "" {
		t.Errorf("evicted (-want +got):\n%s", diff)
	}

	s, ok := provider.Latest()
	if !ok {
		t.Fatal("no sample kept")
	}
	type seen struct{ Cache, Logs uint64 }
	summary := map[string]seen{}
	for _, ps := range s.Summary("n1", pods.pods).Pods {
		var v seen
		for _, vs := range ps.VolumeStats {
			if vs.Name == "cache" {
				v.Cache = *vs.UsedBytes
			}
		}
		for _, c := range ps.Containers {
			if c.Name == "app" && c.Logs != nil {
				v.Logs = *c.Logs.UsedBytes
			}
		}
		summary[ps.PodRef.Name] = v
	}
	evictionView := map[string]seen{}
	storage := ObserveLocalStorage(s, s.Summary("n1", pods.pods))
	for _, p := range pods.pods {
		ps := storage[p.UID]
		v := seen{Cache: uint64(ps.Volumes["cache"])}
		if i := containerIndex(ps.Containers, "app"); i >= 0 {
			v.Logs = uint64(ps.Containers[i].Logs)
		}
		evictionView[p.Name] = v
	}
	want := map[string]seen{"over": {Cache: 1<<20 + 1, Logs: 700}, "at": {Cache: 1 << 20, Logs: 300}}
	if diff := cmp.Diff(want, summary); diff != "" {
		t.Errorf("the Summary's volumes and logs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, evictionView); diff != "" {
		t.Errorf("the eviction manager's volumes and logs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantWalks, du.walks); diff != "" {
		t.Errorf("reading the sample walked again (-want +got):\n%s", diff)
	}
}

// fixedMachine is a node with 8 GiB of memory, half of it free, and a
// node filesystem of 100 GiB with nodefsFree GiB available.
type fixedMachine struct{ nodefsFree uint64 }

func (fixedMachine) Info(context.Context) (deps.MachineInfo, error) {
	return deps.MachineInfo{MemoryBytes: 8 << 30, MaxPIDs: 1000}, nil
}

func (m fixedMachine) Usage(context.Context) (deps.MachineUsage, error) {
	return deps.MachineUsage{MemoryAvailableBytes: 4 << 30, NodeFSCapacityBytes: 100 << 30, NodeFSAvailableBytes: m.nodefsFree << 30}, nil
}

// countingReclaimer counts node-level reclaims, which free nothing.
type countingReclaimer struct{ containers, images int }

func (r *countingReclaimer) ReclaimContainers(context.Context) error { r.containers++; return nil }
func (r *countingReclaimer) ReclaimImages(context.Context) error     { r.images++; return nil }

// Under disk pressure the cycle reclaims at node level and samples the
// node again to see whether that was enough; that second look does not
// walk the pods' volumes and logs again.
func TestDiskPressureCycleWalksOnce(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	rt := fakecri.New(fakecri.Config{Clock: k, Rand: k.Rand(), Files: memfs.New(),
		NewSignal: func(n string) fakecri.Signal { return k.NewSignal(n) }})
	newPod := func(name string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Name, p.Namespace, p.UID = name, "default", types.UID("uid-"+name)
		p.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers = []corev1.Container{{Name: "app"}}
		return p
	}
	small, big := newPod("small"), newPod("big")
	cache := func(p *corev1.Pod) string {
		return "/root/pods/" + string(p.UID) + "/volumes/kubernetes.io~empty-dir/cache"
	}
	du := &countingDU{walks: map[string]int{}, usage: map[string]deps.DirUsage{
		cache(small): {Bytes: 1 << 20, Inodes: 2},
		cache(big):   {Bytes: 5 << 30, Inodes: 2},
	}}
	pods := &recordingPods{pods: []*corev1.Pod{small, big}}
	provider := stats.New(k.Deps().Core, stats.Ports{Runtime: rt, Images: rt, Machine: fixedMachine{nodefsFree: 1}, Disk: du, Pods: pods},
		stats.Config{RootDir: "/root", PodLogsRoot: "/logs"})
	thresholds, err := ParseThresholds(map[string]string{"nodefs.available": "10%"}, nil, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	reclaim := &countingReclaimer{}
	m := New(k.Deps().Core, Ports{Stats: provider, Pods: pods, Reclaim: reclaim}, Config{Thresholds: thresholds}, "n1", 0)
	k.Go("cycle", func() {
		ctx := context.Background()
		for _, p := range pods.pods {
			if err := runApp(ctx, rt, p); err != nil {
				t.Error(err)
				return
			}
		}
		m.Cycle(ctx)
	})
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	if reclaim.containers != 1 || reclaim.images != 1 {
		t.Errorf("node-level reclaims: %+v, want one of each", *reclaim)
	}
	wantWalks := map[string]int{cache(small): 1, cache(big): 1,
		"/logs/default_small_uid-small/app": 1, "/logs/default_big_uid-big/app": 1}
	if diff := cmp.Diff(wantWalks, du.walks); diff != "" {
		t.Errorf("walks of one cycle (-want +got):\n%s", diff)
	}
	// The node-level second look is not kept: the latest sample still
	// holds the cycle's measure.
	if s, ok := provider.Latest(); !ok || s.VolumeUsage[big.UID]["cache"].UsedBytes != 5<<30 {
		t.Errorf("latest sample's volumes: %v, want the cycle's measure", s.VolumeUsage)
	}
	if len(pods.evicted) != 1 || !strings.Contains(pods.evicted[0], "low on resource: ephemeral-storage") {
		t.Errorf("evicted %q, want one pod for the node's disk", pods.evicted)
	}
}

// runApp runs pod's sandbox and its container "app" on rt.
func runApp(ctx context.Context, rt *fakecri.Runtime, pod *corev1.Pod) error {
	labels := map[string]string{"io.kubernetes.pod.uid": string(pod.UID)}
	sbCfg := &runtimeapi.PodSandboxConfig{Labels: labels,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)}}
	sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		return fmt.Errorf("run sandbox of pod %s: %w", pod.Name, err)
	}
	id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox:latest"},
		Labels: map[string]string{"io.kubernetes.pod.uid": string(pod.UID), "io.kubernetes.container.name": "app"},
	}, sbCfg)
	if err != nil {
		return fmt.Errorf("create container app of pod %s: %w", pod.Name, err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		return fmt.Errorf("start container app of pod %s: %w", pod.Name, err)
	}
	return nil
}
