package scenarios

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/eviction"
	"github.com/lockstep-dev/lockstep/node/imagegc"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// The eviction scenario's node: 6 pods at most, a soft memory threshold
// beside the kubelet's hard defaults, a hard PID threshold, a short
// pressure transition period so that conditions clear within a run, and
// an unused bulky image that image reclaim can remove.
const (
	evictionMaxPods       = 6
	evictionTransition    = 30 * time.Second
	evictionSoftGrace     = 20 * time.Second
	evictionMaxPodGrace   = 5
	evictionBulkyImage    = "registry.example/bulky:1"
	evictionBulkyImageGiB = 8
)

func evictionScenario() Scenario {
	return Scenario{Name: "eviction",
		Doc:      "pods of every QoS class and priority under memory, disk and PID pressure rising and falling, pods whose local storage grows past (or stays under) their limits, with agent crashes",
		Mix:      map[string]int{"create-qos": 8, "create-storage": 3, "node-memory": 3, "node-disk": 2, "node-pids": 1, "delete": 1, "crash": 1, "wait": 1},
		MaxSteps: 20, // a small make-test budget: pressure needs few steps
		Configure: func(c *harness.Config) {
			ts, err := eviction.ParseThresholds(
				map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
					"imagefs.available": "15%", "pid.available": "5%"},
				map[string]string{"memory.available": "600Mi"}, map[string]string{"memory.available": evictionSoftGrace.String()},
				nil, true)
			if err != nil {
				panic(err)
			}
			c.Agent.Eviction = eviction.Config{Thresholds: ts, MaxPodGracePeriod: evictionMaxPodGrace, PressureTransitionPeriod: evictionTransition}
			c.Agent.NodeStatus.MaxPods = evictionMaxPods
			// No minimum image age: node-level reclaim may take any unused
			// image at once, which reclaim-first checks exactly (the
			// image-gc scenario covers the minimum age).
			c.Agent.ImageGC.Policy = imagegc.Policy{HighThresholdPercent: imagegc.DefaultHighThresholdPercent, LowThresholdPercent: imagegc.DefaultLowThresholdPercent}
			c.Runtime.Images = append(fakecri.DefaultImages(), fakecri.Image{Ref: evictionBulkyImage, Size: evictionBulkyImageGiB << 30, Inodes: 5000})
		},
	}
}

// Priorities create-qos draws from (argument b).
var qosPriorities = []int32{-10, 0, 100, 1000}

// opCreateQoS creates a pod of QoS class a (0 BestEffort, 1 Burstable,
// 2 Guaranteed, 3 a critical BestEffort pod), priority b and usage level c
// (working set 16Mi·2^c, writable layer (c+1)·512Mi, 10·(c+1) processes).
func opCreateQoS(r *run, a [3]int) error {
	name := fmt.Sprintf("q%d", r.step)
	if err := opCreateQoSNamed(r, name, a); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}

// opCreateQoSNamed creates create-qos's pod under name.
func opCreateQoSNamed(r *run, name string, a [3]int) error {
	level := pick(a[2], 6)
	opts := []PodOption{
		Env("app", "FAKECRI_MEMORY", fmt.Sprintf("%dMi", 16<<level)),
		Env("app", "FAKECRI_DISK", fmt.Sprintf("%dMi", 512*(level+1))),
		Env("app", "FAKECRI_PIDS", fmt.Sprint(10*(level+1))),
		Grace(10),
	}
	prio := qosPriorities[pick(a[1], len(qosPriorities))]
	switch pick(a[0], 4) {
	case 1:
		opts = append(opts, Resources("app", "50m", "64Mi", "", ""))
	case 2:
		opts = append(opts, Resources("app", "100m", "1500Mi", "100m", "1500Mi"))
	case 3:
		prio = 2_000_001_000
		opts = append(opts, func(p *corev1.Pod) { p.Spec.PriorityClassName = "system-node-critical" })
	}
	opts = append(opts, func(p *corev1.Pod) { p.Spec.Priority = &prio })
	_, err := Create(r.h, NewPod(name, r.h.NodeName, opts...))
	return err
}

// Resources sets a container's cpu and memory requests and limits ("" for
// none).
func Resources(container, cpuReq, memReq, cpuLim, memLim string) PodOption {
	return func(p *corev1.Pod) {
		c := findOrAdd(p, container)
		set := func(l *corev1.ResourceList, name corev1.ResourceName, v string) {
			if v == "" {
				return
			}
			if *l == nil {
				*l = corev1.ResourceList{}
			}
			(*l)[name] = resource.MustParse(v)
		}
		set(&c.Resources.Requests, corev1.ResourceCPU, cpuReq)
		set(&c.Resources.Requests, corev1.ResourceMemory, memReq)
		set(&c.Resources.Limits, corev1.ResourceCPU, cpuLim)
		set(&c.Resources.Limits, corev1.ResourceMemory, memLim)
	}
}

// Memory levels of node-memory: the node's available memory aimed at.
var nodeMemoryLevels = []uint64{3 << 30, 700 << 20, 450 << 20, 150 << 20, 60 << 20}

// opNodeMemory sets the memory used outside containers so that the node
// has level a's available memory now (pods starting and stopping move it
// afterwards).
func opNodeMemory(r *run, a [3]int) error {
	target := nodeMemoryLevels[pick(a[0], len(nodeMemoryLevels))]
	u, m := r.h.Runtime.NodeUsage(), r.h.Runtime.Node()
	containers := u.MemoryWorkingSet - m.MemoryBase
	r.h.Runtime.SetNodeMemoryUsage(subFloor(m.MemoryCapacity, target+containers))
	r.h.MemoryMoved()
	r.fault("node-memory", "available", target)
	return nil
}

// Disk levels of node-disk: the free share of the node filesystem (a) and
// of the image filesystem (b).
var (
	nodefsLevels  = []float64{0.4, 0.12, 0.08, 0.03}
	imagefsLevels = []float64{0.4, 0.1}
)

// opNodeDisk sets the node and image filesystems' usage outside
// containers, logs and images so that level a (nodefs) and b (imagefs) of
// them is free now.
func opNodeDisk(r *run, a [3]int) error {
	nf, imf := nodefsLevels[pick(a[0], len(nodefsLevels))], imagefsLevels[pick(a[1], len(imagefsLevels))]
	u, m := r.h.Runtime.NodeUsage(), r.h.Runtime.Node()
	nodefsOther := u.Nodefs.Used - m.NodefsBase
	imagefsOther := u.Imagefs.Used - m.ImagefsBase
	r.h.Runtime.SetNodeDiskUsage(
		subFloor(uint64(float64(m.NodefsCapacity)*(1-nf)), nodefsOther),
		subFloor(uint64(float64(m.ImagefsCapacity)*(1-imf)), imagefsOther))
	r.fault("node-disk", "nodefs-free", nf, "imagefs-free", imf)
	return nil
}

// PID levels of node-pids: the free share of the node's PIDs.
var pidLevels = []float64{0.5, 0.03}

// opNodePIDs sets the processes outside containers so that level a of the
// PIDs is free now.
func opNodePIDs(r *run, a [3]int) error {
	free := pidLevels[pick(a[0], len(pidLevels))]
	u, m := r.h.Runtime.NodeUsage(), r.h.Runtime.Node()
	containers := u.PIDsUsed - m.PIDBase
	r.h.Runtime.SetNodePIDUsage(subFloor(uint64(float64(m.PIDCapacity)*(1-free)), containers))
	r.fault("node-pids", "free", free)
	return nil
}

// subFloor is a−b, or 0 when b > a.
func subFloor(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}
