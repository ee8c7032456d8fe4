package daemon

import (
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/cpumanager"
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
func (o *Options) validateCPUManager(bad func(key string, value any, rule string) error) error {
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
func applyCPUManager(c *kubeletv1beta1.KubeletConfiguration, o *Options, set func(field, flag string, apply func())) {
	set("cpuManagerPolicy", "cpu-manager-policy", func() { o.CPUManager.Policy = c.CPUManagerPolicy })
	set("cpuManagerPolicyOptions", "cpu-manager-policy-options", func() { o.CPUManager.PolicyOptions = c.CPUManagerPolicyOptions })
	set("cpuManagerReconcilePeriod", "cpu-manager-reconcile-period", func() { o.CPUManager.ReconcilePeriod = c.CPUManagerReconcilePeriod.Duration })
	set("reservedSystemCPUs", "reserved-cpus", func() { o.CPUManager.ReservedCPUs = c.ReservedSystemCPUs })
}
