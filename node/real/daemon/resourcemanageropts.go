package daemon

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/cm/cpumanager"
	"github.com/lockstep-dev/lockstep/node/cm/memorymanager"
	"github.com/lockstep-dev/lockstep/node/cm/topologymanager"
)

// CPUManagerOptions are the CPU manager's options (kubelet flags and
// KubeletConfiguration fields of the same names).
type CPUManagerOptions struct {
	// Policy is none or static (--cpu-manager-policy).
	Policy string
	// PolicyOptions: full-pcpus-only=true (--cpu-manager-policy-options).
	PolicyOptions map[string]string
	// ReconcilePeriod is how often containers' cpusets are brought in
	// step (--cpu-manager-reconcile-period).
	ReconcilePeriod time.Duration
	// ReservedCPUs is the list of CPUs kept for the system and
	// Kubernetes daemons (--reserved-cpus, "0-1,4"); it replaces the cpu
	// of --kube-reserved and --system-reserved.
	ReservedCPUs string
}

// DefaultCPUManagerOptions are the kubelet's defaults.
func DefaultCPUManagerOptions() CPUManagerOptions {
	return CPUManagerOptions{Policy: cpumanager.PolicyNone, ReconcilePeriod: cpumanager.DefaultReconcilePeriod}
}

// validateCPUManager checks the CPU manager options; bad formats the
// error. (The policy's own checks against the machine run at start.)
func (o *Options) validateCPUManager(bad badOption) error {
	c := o.CPUManager
	switch c.Policy {
	case cpumanager.PolicyNone, cpumanager.PolicyStatic:
	default:
		return bad("cpu-manager-policy", c.Policy, "must be none or static")
	}
	if c.ReconcilePeriod <= 0 {
		return bad("cpu-manager-reconcile-period", c.ReconcilePeriod, "must be a positive duration such as 10s")
	}
	if _, err := cpuset.Parse(c.ReservedCPUs); err != nil {
		return bad("reserved-cpus", c.ReservedCPUs, "must be a CPU list such as 0-1,4")
	}
	for name, v := range c.PolicyOptions {
		if name != cpumanager.OptionFullPCPUsOnly {
			return bad("cpu-manager-policy-options", c.PolicyOptions, "unknown option "+strconv.Quote(name)+" (supported: "+cpumanager.OptionFullPCPUsOnly+")")
		}
		if _, err := strconv.ParseBool(v); err != nil {
			return bad("cpu-manager-policy-options", c.PolicyOptions, name+" must be true or false")
		}
	}
	return nil
}

// NodeReserved is what node allocatable takes away from capacity:
// kube-reserved plus system-reserved, whose cpu --reserved-cpus replaces
// with its CPU count, as the kubelet does.
func (o *Options) NodeReserved() corev1.ResourceList {
	out := o.Cgroups.Reserved()
	if cpus, _ := cpuset.Parse(o.CPUManager.ReservedCPUs); cpus.Size() > 0 {
		out[corev1.ResourceCPU] = *resource.NewQuantity(int64(cpus.Size()), resource.DecimalSI)
	}
	return out
}

// CPUManagerConfig is the agent's CPU manager configuration.
func (o *Options) CPUManagerConfig() cpumanager.Config {
	reserved, _ := cpuset.Parse(o.CPUManager.ReservedCPUs)
	num := 0
	if cpu, ok := o.NodeReserved()[corev1.ResourceCPU]; ok {
		num = int(math.Ceil(float64(cpu.MilliValue()) / 1000))
	}
	return cpumanager.Config{Policy: o.CPUManager.Policy, ReservedCPUs: reserved, NumReservedCPUs: num,
		Options: o.CPUManager.PolicyOptions, ReconcilePeriod: o.CPUManager.ReconcilePeriod, RootDir: o.RootDir}
}

// applyCPUManager copies the file's CPU manager fields with set (see
// Apply).
func applyCPUManager(c *kubeletv1beta1.KubeletConfiguration, o *Options, set setter) {
	set("cpuManagerPolicy", "cpu-manager-policy", func() { o.CPUManager.Policy = c.CPUManagerPolicy })
	set("cpuManagerPolicyOptions", "cpu-manager-policy-options", func() { o.CPUManager.PolicyOptions = c.CPUManagerPolicyOptions })
	set("cpuManagerReconcilePeriod", "cpu-manager-reconcile-period", func() { o.CPUManager.ReconcilePeriod = c.CPUManagerReconcilePeriod.Duration })
	set("reservedSystemCPUs", "reserved-cpus", func() { o.CPUManager.ReservedCPUs = c.ReservedSystemCPUs })
}

// MemoryManagerOptions are the memory and topology managers' options
// (kubelet flags and KubeletConfiguration fields of the same names).
type MemoryManagerOptions struct {
	// Policy is None or Static (--memory-manager-policy).
	Policy string
	// ReservedMemory is the memory kept off each NUMA node
	// (--reserved-memory 0:memory=1Gi;1:memory=2Gi).
	ReservedMemory []string
	// TopologyPolicy is none, best-effort, restricted or single-numa-node
	// (--topology-manager-policy).
	TopologyPolicy string
	// TopologyScope is container (--topology-manager-scope; pod is not
	// supported).
	TopologyScope string
}

// DefaultMemoryManagerOptions are the kubelet's defaults.
func DefaultMemoryManagerOptions() MemoryManagerOptions {
	return MemoryManagerOptions{Policy: memorymanager.PolicyNone, TopologyPolicy: topologymanager.PolicyNone, TopologyScope: "container"}
}

// parseReservedMemory reads --reserved-memory values: "<node>:memory=<q>"
// entries, separated by ';' or given one per flag.
func parseReservedMemory(values []string) (map[int]uint64, error) {
	out := map[int]uint64{}
	for _, v := range values {
		for _, entry := range strings.Split(v, ";") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			node, list, ok := strings.Cut(entry, ":")
			id, err := strconv.Atoi(node)
			if !ok || err != nil || id < 0 {
				return nil, fmt.Errorf("%q: want <NUMA node>:memory=<quantity>", entry)
			}
			for _, kv := range strings.Split(list, ",") {
				name, q, ok := strings.Cut(kv, "=")
				if !ok || name != string(corev1.ResourceMemory) {
					return nil, fmt.Errorf("%q: only memory=<quantity> is supported", entry)
				}
				qty, err := resource.ParseQuantity(q)
				if err != nil || qty.Sign() < 0 {
					return nil, fmt.Errorf("%q: %s is not a non-negative quantity", entry, q)
				}
				out[id] += uint64(qty.Value())
			}
		}
	}
	return out, nil
}

// validateMemoryManager checks the memory and topology manager options.
func (o *Options) validateMemoryManager(bad badOption) error {
	c := o.MemoryManager
	if c.Policy != memorymanager.PolicyNone && c.Policy != memorymanager.PolicyStatic {
		return bad("memory-manager-policy", c.Policy, "must be None or Static")
	}
	if _, err := parseReservedMemory(c.ReservedMemory); err != nil {
		return bad("reserved-memory", strings.Join(c.ReservedMemory, ";"), err.Error())
	}
	if !topologymanager.ValidPolicy(c.TopologyPolicy) {
		return bad("topology-manager-policy", c.TopologyPolicy, "must be none, best-effort, restricted or single-numa-node")
	}
	if c.TopologyScope != "container" {
		return bad("topology-manager-scope", c.TopologyScope, "only container is supported")
	}
	return nil
}

// MemoryManagerConfig is the agent's memory manager configuration.
func (o *Options) MemoryManagerConfig() memorymanager.Config {
	reserved, _ := parseReservedMemory(o.MemoryManager.ReservedMemory)
	return memorymanager.Config{Policy: o.MemoryManager.Policy, Reserved: reserved, RootDir: o.RootDir}
}

// applyMemoryManager copies the file's memory and topology manager
// fields with set (see Apply).
func applyMemoryManager(c *kubeletv1beta1.KubeletConfiguration, o *Options, set setter) {
	set("memoryManagerPolicy", "memory-manager-policy", func() { o.MemoryManager.Policy = c.MemoryManagerPolicy })
	set("reservedMemory", "reserved-memory", func() {
		o.MemoryManager.ReservedMemory = nil
		for _, r := range c.ReservedMemory {
			var parts []string
			for _, name := range slices.Sorted(maps.Keys(r.Limits)) {
				q := r.Limits[name]
				parts = append(parts, string(name)+"="+q.String())
			}
			o.MemoryManager.ReservedMemory = append(o.MemoryManager.ReservedMemory, fmt.Sprintf("%d:%s", r.NumaNode, strings.Join(parts, ",")))
		}
	})
	set("topologyManagerPolicy", "topology-manager-policy", func() { o.MemoryManager.TopologyPolicy = c.TopologyManagerPolicy })
	set("topologyManagerScope", "topology-manager-scope", func() { o.MemoryManager.TopologyScope = c.TopologyManagerScope })
}
