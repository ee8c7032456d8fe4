package stats

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/statssummary"
)

// KernelStats is what the kernel reports of a sample's cgroups: what
// cAdvisor reads for the kubelet. Each map is empty, not nil, when its
// read failed (logged once).
type KernelStats struct {
	// Containers are the running containers' cgroups by runtime ID;
	// Pods the pods' cgroups by pod UID; System the node's root ("")
	// and its system containers ("kubelet", "runtime", "pods", "misc").
	Containers, Pods, System map[string]deps.CgroupStats
	// CPU are the cgroups' CPU usage in the CRI's form, with a rate from
	// the sample before where there was one: by "c/<container ID>",
	// "p/<pod UID>" and "sys/<system name>".
	CPU map[string]*runtimeapi.CpuUsage
	// Network are the pods' interfaces' counters by sandbox ID, where the
	// Network port reads them (real nodes).
	Network map[string][]deps.NetInterface
}

// InterfaceReader is a NetworkReader that also reads every interface's
// full counters (packets, drops) of a sandbox; nil for host network.
type InterfaceReader interface {
	PodInterfaces(ctx context.Context, sandboxID string) ([]deps.NetInterface, error)
}

// readKernel reads the cgroups of the running containers and their pods
// and the system cgroups. What cannot be read is left out and logged
// once: these figures complete a sample, they do not make it.
func (p *Provider) readKernel(ctx context.Context, containers []*runtimeapi.Container) *KernelStats {
	var ids, uids []string
	for _, c := range containers {
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		ids = append(ids, c.GetId())
		if uid := c.GetLabels()[podstate.LabelPodUID]; uid != "" && !slices.Contains(uids, uid) {
			uids = append(uids, uid)
		}
	}
	k := &KernelStats{CPU: map[string]*runtimeapi.CpuUsage{}}
	var err error
	if k.Containers, err = p.ports.Cgroups.Containers(ctx, ids); err != nil {
		p.warnOnce(&p.warnedCgroups, "containers' cgroups partly unread", err)
	}
	if k.Pods, err = p.ports.Cgroups.Pods(ctx, uids); err != nil {
		p.warnOnce(&p.warnedCgroups, "pods' cgroups partly unread", err)
	}
	if k.System, err = p.ports.Cgroups.System(ctx); err != nil {
		p.warnOnce(&p.warnedCgroups, "system cgroups partly unread", err)
	}
	at := p.d.Clock.Now().UnixNano()
	for prefix, m := range map[string]map[string]deps.CgroupStats{"c/": k.Containers, "p/": k.Pods, "sys/": k.System} {
		for id, s := range m {
			k.CPU[prefix+id] = &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: s.CPU.UsageNanos}}
		}
	}
	return k
}

// kernelCPUs lists the kernel's CPU usages by their reading IDs, sorted.
func (k *KernelStats) kernelCPUs() (ids []string, cpus []*runtimeapi.CpuUsage) {
	if k == nil {
		return nil, nil
	}
	for id := range k.CPU {
		ids = append(ids, "k/"+id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		cpus = append(cpus, k.CPU[id[len("k/"):]])
	}
	return ids, cpus
}

// MemoryLimit is container id's memory limit as its cgroup holds it (the
// kernel rounds memory.max down to a page multiple), else, when the
// kernel was not read, what its spec asks (0: none); false when neither
// limits it.
func (s Sample) MemoryLimit(id string, spec *corev1.Container) (uint64, bool) {
	if k, ok := s.Kernel.container(id); ok && !teethSpecMemoryLimit {
		l := k.Spec.MemoryLimit
		return l, l != deps.Unlimited && l != 0
	}
	if spec == nil {
		return 0, false
	}
	l := spec.Resources.Limits.Memory().Value()
	return uint64(max(l, 0)), l > 0
}

// container is the kernel's figures of container id, false when unread.
func (k *KernelStats) container(id string) (deps.CgroupStats, bool) {
	if k == nil {
		return deps.CgroupStats{}, false
	}
	c, ok := k.Containers[id]
	return c, ok
}

// summaryKernel is the kernel's figures as the Summary takes them; nil
// when the kernel was not read.
func (s Sample) summaryKernel() *statssummary.Kernel {
	if s.Kernel == nil {
		return nil
	}
	return &statssummary.Kernel{Containers: s.Kernel.Containers, Pods: s.Kernel.Pods, System: s.Kernel.System, CPU: s.Kernel.CPU,
		Started: s.Started, MemoryLimit: s.MemoryLimit, ImageFs: s.ImageFs}
}
