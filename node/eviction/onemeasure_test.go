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

// One eviction cycle measures each volume and log directory once, and the
// eviction manager (local storage limits) and the stats Summary read the
// same figures from that one measure: the pod whose emptyDir is one byte
// over its sizeLimit is evicted, the one exactly at it is not, and the
// Summary of the sample reports those very bytes.
func TestEvictionAndSummaryShareOneMeasure(t *testing.T) {
	limit := resource.MustParse("1Mi")
	over, at := cachePod("over", &limit), cachePod("at", &limit)
	n := newCycleNode(t, fixedMachine{nodefsFree: 50}, map[string]deps.DirUsage{
		cacheDir(over): {Bytes: 1<<20 + 1, Inodes: 3},
		cacheDir(at):   {Bytes: 1 << 20, Inodes: 2},
		logDir(over):   {Bytes: 700, Inodes: 2},
		logDir(at):     {Bytes: 300, Inodes: 2},
	}, over, at)
	n.cycle(t, Config{})

	wantWalks := map[string]int{cacheDir(over): 1, cacheDir(at): 1, logDir(over): 1, logDir(at): 1}
	if diff := cmp.Diff(wantWalks, n.du.walks); diff != "" {
		t.Errorf("walks of one cycle (-want +got):\n%s", diff)
	}
	wantEvicted := []string{`over: Usage of EmptyDir volume "cache" exceeds the limit "1Mi". `}
	if diff := cmp.Diff(wantEvicted, n.pods.evicted); diff != "" {
		t.Errorf("evicted (-want +got):\n%s", diff)
	}

	s, ok := n.provider.Latest()
	if !ok {
		t.Fatal("no sample kept")
	}
	type seen struct{ Cache, Logs uint64 }
	summary := map[string]seen{}
	for _, ps := range s.Summary("n1", n.pods.pods).Pods {
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
	storage := ObserveLocalStorage(s, s.Summary("n1", n.pods.pods))
	for _, p := range n.pods.pods {
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
	if diff := cmp.Diff(wantWalks, n.du.walks); diff != "" {
		t.Errorf("reading the sample walked again (-want +got):\n%s", diff)
	}
}

// Under disk pressure the cycle reclaims at node level and samples the
// node again to see whether that was enough; that second look does not
// walk the pods' volumes and logs again, nor replaces the cycle's sample.
func TestDiskPressureCycleWalksOnce(t *testing.T) {
	small, big := cachePod("small", nil), cachePod("big", nil)
	n := newCycleNode(t, fixedMachine{nodefsFree: 1}, map[string]deps.DirUsage{
		cacheDir(small): {Bytes: 1 << 20, Inodes: 2},
		cacheDir(big):   {Bytes: 5 << 30, Inodes: 2},
	}, small, big)
	thresholds, err := ParseThresholds(map[string]string{"nodefs.available": "10%"}, nil, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	n.cycle(t, Config{Thresholds: thresholds})

	if n.reclaim.containers != 1 || n.reclaim.images != 1 {
		t.Errorf("node-level reclaims: %+v, want one of each", *n.reclaim)
	}
	wantWalks := map[string]int{cacheDir(small): 1, cacheDir(big): 1, logDir(small): 1, logDir(big): 1}
	if diff := cmp.Diff(wantWalks, n.du.walks); diff != "" {
		t.Errorf("walks of one cycle (-want +got):\n%s", diff)
	}
	if s, ok := n.provider.Latest(); !ok || s.VolumeUsage[big.UID]["cache"].UsedBytes != 5<<30 {
		t.Errorf("latest sample's volumes: %v, want the cycle's measure", s.VolumeUsage)
	}
	if len(n.pods.evicted) != 1 || !strings.Contains(n.pods.evicted[0], "low on resource: ephemeral-storage") {
		t.Errorf("evicted %q, want one pod for the node's disk", n.pods.evicted)
	}
}

// cachePod is pod name with an emptyDir "cache" (sizeLimit limit, nil
// none) and a container "app".
func cachePod(name string, limit *resource.Quantity) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = name, "default", types.UID("uid-"+name)
	p.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: limit}}}}
	p.Spec.Containers = []corev1.Container{{Name: "app"}}
	return p
}

// cacheDir and logDir are where a cachePod's volume and its app's logs
// live on a cycleNode.
func cacheDir(p *corev1.Pod) string {
	return "/root/pods/" + string(p.UID) + "/volumes/kubernetes.io~empty-dir/cache"
}
func logDir(p *corev1.Pod) string { return "/logs/default_" + p.Name + "_" + string(p.UID) + "/app" }

// cycleNode is a simulated node for one eviction cycle: a fake runtime,
// a du that counts its walks, the pods and the stats provider over them.
type cycleNode struct {
	k        *kernel.Kernel
	rt       *fakecri.Runtime
	du       *countingDU
	pods     *recordingPods
	reclaim  *countingReclaimer
	provider *stats.Provider
}

func newCycleNode(t *testing.T, machine fixedMachine, usage map[string]deps.DirUsage, pods ...*corev1.Pod) *cycleNode {
	k := kernel.New(kernel.Config{Seed: 1})
	t.Cleanup(k.Close)
	n := &cycleNode{k: k, du: &countingDU{walks: map[string]int{}, usage: usage}, pods: &recordingPods{pods: pods}, reclaim: &countingReclaimer{}}
	n.rt = fakecri.New(fakecri.Config{Clock: k, Rand: k.Rand(), Files: memfs.New(),
		NewSignal: func(name string) fakecri.Signal { return k.NewSignal(name) }})
	n.provider = stats.New(k.Deps().Core, stats.Ports{Runtime: n.rt, Images: n.rt, Machine: machine, Disk: n.du, Pods: n.pods},
		stats.Config{RootDir: "/root", PodLogsRoot: "/logs"})
	return n
}

// cycle starts the pods' app containers and runs one cycle of an
// eviction manager configured by cfg.
func (n *cycleNode) cycle(t *testing.T, cfg Config) {
	t.Helper()
	m := New(n.k.Deps().Core, Ports{Stats: n.provider, Pods: n.pods, Reclaim: n.reclaim}, cfg, "n1", 0)
	n.k.Go("cycle", func() {
		ctx := context.Background()
		for _, p := range n.pods.pods {
			if err := runApp(ctx, n.rt, p); err != nil {
				t.Error(err)
				return
			}
		}
		m.Cycle(ctx)
	})
	if err := n.k.RunFor(time.Second); err != nil {
		t.Fatal(err)
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

// countingReclaimer counts node-level reclaims, which free nothing.
type countingReclaimer struct{ containers, images int }

func (r *countingReclaimer) ReclaimContainers(context.Context) error { r.containers++; return nil }
func (r *countingReclaimer) ReclaimImages(context.Context) error     { r.images++; return nil }

// fixedMachine is a node with 8 GiB of memory, half of it free, and a
// node filesystem of 100 GiB with nodefsFree GiB available.
type fixedMachine struct{ nodefsFree uint64 }

func (fixedMachine) Info(context.Context) (deps.MachineInfo, error) {
	return deps.MachineInfo{MemoryBytes: 8 << 30, MaxPIDs: 1000}, nil
}

func (m fixedMachine) Usage(context.Context) (deps.MachineUsage, error) {
	return deps.MachineUsage{MemoryAvailableBytes: 4 << 30, NodeFSCapacityBytes: 100 << 30, NodeFSAvailableBytes: m.nodefsFree << 30}, nil
}
