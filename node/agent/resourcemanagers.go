package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/allocation"
	"github.com/lockstep-dev/lockstep/node/cm/cgroups"
	"github.com/lockstep-dev/lockstep/node/cm/cpumanager"
	"github.com/lockstep-dev/lockstep/node/cm/devicemanager"
	"github.com/lockstep-dev/lockstep/node/cm/memorymanager"
	"github.com/lockstep-dev/lockstep/node/cm/topologymanager"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podspec"
)

// containerManager is what upstream's container manager holds: the pod
// and QoS cgroups, the pods' allocations (checkpointed), the CPU, memory
// and topology managers and the device plugin manager.
type containerManager struct {
	cgroups *cgroups.Manager
	alloc   *allocation.Store
	resourceManagers
	// devices is the device plugin manager (nil without a registry).
	devices *devicemanager.Manager
}

// newContainerManager builds the container manager but its device
// manager, and points the executor's config at it (the allocated
// resources, the pod cgroups' parent, the containers' cpusets).
func newContainerManager(d deps.Deps, cfg *Config) (containerManager, error) {
	cm := containerManager{alloc: newAllocations(d, *cfg)}
	cfg.RuntimeSync.Resized = cm.alloc.Resized
	cm.cgroups = newCgroups(d, *cfg)
	pods := cm.cgroups
	cfg.RuntimeSync.CgroupParent = func(pod *corev1.Pod) string { return pods.CgroupParent(pod, podspec.QOSClass(pod)) }
	rm, err := newResourceManagers(d, *cfg)
	if err != nil {
		return cm, err
	}
	cm.resourceManagers = rm
	cfg.RuntimeSync.ContainerCPUSet = rm.cpuSet
	return cm, nil
}

// resourceManagers are the CPU, memory and topology managers.
type resourceManagers struct {
	cpus     *cpumanager.Manager
	memory   *memorymanager.Manager
	topology *topologymanager.Manager
}

// newResourceManagers builds the resource managers over the machine's
// topology, their checkpoints under the root directory. cfg.NodeStatus
// .Reserved already holds the hard eviction reserve.
func newResourceManagers(d deps.Deps, cfg Config) (resourceManagers, error) {
	var info deps.MachineInfo
	if d.Machine != nil {
		var err error
		// Built before any task runs; both machines answer at once.
		if info, err = d.Machine.Info(context.Background()); err != nil {
			info = deps.MachineInfo{}
		}
	}
	root := cfg.Node.RootDir
	if root == "" {
		root = podspec.DefaultRootDir
	}
	var rm resourceManagers
	var err error
	c := cfg.CPUManager
	if c.RootDir == "" {
		c.RootDir = root
	}
	cp := cpumanager.Ports{Runtime: d.Runtime, Files: d.Files}
	if cfg.Metrics != nil {
		cp.Metrics = cfg.Metrics
	}
	if rm.cpus, err = cpumanager.New(d.Core, cp, c, info); err != nil {
		return rm, fmt.Errorf("CPU manager: %w", err)
	}
	mc := cfg.MemoryManager
	if mc.RootDir == "" {
		mc.RootDir = root
	}
	if q, ok := cfg.NodeStatus.Reserved[corev1.ResourceMemory]; ok {
		mc.NodeReserved = uint64(q.Value())
	}
	if rm.memory, err = memorymanager.New(d.Core, d.Files, mc, info); err != nil {
		return rm, fmt.Errorf("memory manager: %w", err)
	}
	var nodes []int
	for _, n := range info.NUMANodes {
		nodes = append(nodes, n.ID)
	}
	if len(nodes) == 0 {
		nodes = []int{0}
	}
	if rm.topology, err = topologymanager.New(cfg.TopologyManagerPolicy, nodes); err != nil {
		return rm, fmt.Errorf("topology manager: %w", err)
	}
	return rm, nil
}

// cpuSet is the cpuset (CPUs and memory nodes) a new container runs on.
func (rm resourceManagers) cpuSet(pod *corev1.Pod, container string) (cpus, mems string) {
	return rm.cpus.CPUs(pod.UID, container), rm.memory.Mems(pod.UID, container)
}

// admitResources places the pod's containers on CPUs and NUMA nodes; a
// pod that cannot get them is refused as the kubelet refuses it.
func (a *Agent) admitResources(pod *corev1.Pod) admission.Decision {
	return a.cm.topology.Admit(pod, a.cm.cpus, a.cm.memory)
}

// releaseResources gives back a finished pod's CPUs and memory.
func (a *Agent) releaseResources(pod *corev1.Pod) {
	a.cm.cpus.Release(pod)
	a.cm.memory.Release(pod)
}

// resourceHousekeeping gives back the memory of pods no longer active
// (the CPU manager's reconcile loop does so for CPUs).
func (a *Agent) resourceHousekeeping() {
	a.cm.memory.ReleaseStale(a.holdingResources())
}

// cpuPods is the agent's side of the CPU manager's reconcile loop.
type cpuPods struct{ a *Agent }

// HoldingResources are the pods that may hold CPUs, once every source
// spoke.
func (p cpuPods) HoldingResources() ([]*corev1.Pod, bool) {
	if !p.a.merger.AllSeen() {
		return nil, false
	}
	return p.a.holdingResources(), true
}

// RunningContainers are the running containers in the runtime's view.
func (p cpuPods) RunningContainers() []cpumanager.Container {
	var out []cpumanager.Container
	cache := p.a.pleg.Cache()
	for _, uid := range cache.UIDs() {
		st, ok := cache.Get(uid)
		if !ok {
			continue
		}
		for _, c := range st.Running() {
			out = append(out, cpumanager.Container{PodUID: uid, Name: c.Name, ID: c.ID})
		}
	}
	return out
}
