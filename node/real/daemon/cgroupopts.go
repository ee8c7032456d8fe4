package daemon

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/lockstep-dev/lockstep/node/cm/cgroups"
	"github.com/lockstep-dev/lockstep/node/deps"
	realcgroups "github.com/lockstep-dev/lockstep/node/real/cgroups"
	"github.com/lockstep-dev/lockstep/node/real/cgstats"
)

// enforcePods is the --enforce-node-allocatable value that limits the
// kubepods cgroup to allocatable; "none" enforces nothing.
const (
	enforcePods = "pods"
	enforceNone = "none"
)

// CgroupOptions are the pod and QoS cgroup options (kubelet flags and
// KubeletConfiguration fields of the same names).
type CgroupOptions struct {
	// CgroupsPerQOS builds the kubepods hierarchy (--cgroups-per-qos).
	CgroupsPerQOS bool
	// CgroupRoot is the cgroup kubepods goes under (--cgroup-root).
	CgroupRoot string
	// CgroupDriver is cgroupfs or systemd (--cgroup-driver); it must be
	// the runtime's.
	CgroupDriver string
	// KubeReserved and SystemReserved are taken out of allocatable
	// (--kube-reserved, --system-reserved: cpu, memory,
	// ephemeral-storage, pid).
	KubeReserved, SystemReserved map[string]string
	// EnforceNodeAllocatable: "pods" limits kubepods to allocatable,
	// "none" (or empty) to capacity (--enforce-node-allocatable).
	EnforceNodeAllocatable []string
	// QOSReserved reserves memory of higher QoS classes from lower ones
	// (--qos-reserved=memory=50%).
	QOSReserved map[string]string
}

// DefaultCgroupOptions are the kubelet's defaults.
func DefaultCgroupOptions() CgroupOptions {
	return CgroupOptions{CgroupsPerQOS: true, CgroupRoot: "/", CgroupDriver: string(cgroups.DriverCgroupfs),
		EnforceNodeAllocatable: []string{enforcePods}}
}

// validateCgroups checks the cgroup options; bad formats the error.
func (o *Options) validateCgroups(bad badOption) error {
	c := o.Cgroups
	if _, err := cgroups.ParseDriver(c.CgroupDriver); err != nil {
		return bad("cgroup-driver", c.CgroupDriver, "must be cgroupfs or systemd")
	}
	if !strings.HasPrefix(c.CgroupRoot, "/") {
		return bad("cgroup-root", c.CgroupRoot, "must be an absolute cgroup path such as /")
	}
	for _, v := range c.EnforceNodeAllocatable {
		switch v {
		case enforcePods, enforceNone:
		case "system-reserved", "kube-reserved", "system-reserved-compressible", "kube-reserved-compressible":
			return bad("enforce-node-allocatable", strings.Join(c.EnforceNodeAllocatable, ","),
				v+" is not supported (it needs --system-reserved-cgroup/--kube-reserved-cgroup); use pods or none")
		default:
			return bad("enforce-node-allocatable", strings.Join(c.EnforceNodeAllocatable, ","), fmt.Sprintf("unknown value %q (pods or none)", v))
		}
	}
	if slices.Contains(c.EnforceNodeAllocatable, enforceNone) && len(c.EnforceNodeAllocatable) > 1 {
		return bad("enforce-node-allocatable", strings.Join(c.EnforceNodeAllocatable, ","), "none cannot be combined with other values")
	}
	if slices.Contains(c.EnforceNodeAllocatable, enforcePods) && !c.CgroupsPerQOS {
		return bad("enforce-node-allocatable", strings.Join(c.EnforceNodeAllocatable, ","), "pods needs --cgroups-per-qos=true")
	}
	for key, m := range map[string]map[string]string{"kube-reserved": c.KubeReserved, "system-reserved": c.SystemReserved} {
		if _, err := parseReserved(m); err != nil {
			return bad(key, m, err.Error())
		}
	}
	if _, err := memoryReservePercent(c.QOSReserved); err != nil {
		return bad("qos-reserved", c.QOSReserved, err.Error())
	}
	return nil
}

// reservedResources are the names --kube-reserved and --system-reserved
// take.
var reservedResources = sets.New("cpu", "memory", "ephemeral-storage", "pid")

// parseReserved parses a reservation (name=quantity).
func parseReserved(m map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if !reservedResources.Has(name) && !strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
			return nil, fmt.Errorf("unknown resource %q (cpu, memory, ephemeral-storage, pid)", name)
		}
		q, err := resource.ParseQuantity(m[name])
		if err != nil || q.Sign() < 0 {
			return nil, fmt.Errorf("%s=%s is not a non-negative quantity", name, m[name])
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// Reserved is kube-reserved plus system-reserved, what node allocatable
// takes away from capacity.
func (c CgroupOptions) Reserved() corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, m := range []map[string]string{c.KubeReserved, c.SystemReserved} {
		rl, _ := parseReserved(m)
		for name, q := range rl {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// memoryReservePercent reads memory=N% from --qos-reserved.
func memoryReservePercent(m map[string]string) (int64, error) {
	var pct int64
	for name, v := range m {
		if name != string(corev1.ResourceMemory) {
			return 0, fmt.Errorf("only memory can be reserved, not %q", name)
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(v, "%"), 10, 64)
		if err != nil || !strings.HasSuffix(v, "%") || n < 0 || n > 100 {
			return 0, fmt.Errorf("memory=%s is not a percentage between 0%% and 100%%", v)
		}
		pct = n
	}
	return pct, nil
}

// Config is the agent's cgroup configuration.
func (c CgroupOptions) Config() cgroups.Config {
	driver, _ := cgroups.ParseDriver(c.CgroupDriver)
	pct, _ := memoryReservePercent(c.QOSReserved)
	return cgroups.Config{CgroupsPerQOS: c.CgroupsPerQOS, Root: c.CgroupRoot, Driver: driver,
		EnforcePods: slices.Contains(c.EnforceNodeAllocatable, enforcePods), MemoryReservePercent: pct}
}

// applyCgroups copies the file's cgroup fields with set (see Apply).
func applyCgroups(c *kubeletv1beta1.KubeletConfiguration, o *Options, set setter) {
	set("cgroupsPerQOS", "cgroups-per-qos", func() {
		if c.CgroupsPerQOS != nil {
			o.Cgroups.CgroupsPerQOS = *c.CgroupsPerQOS
		}
	})
	set("cgroupRoot", "cgroup-root", func() { o.Cgroups.CgroupRoot = c.CgroupRoot })
	set("cgroupDriver", "cgroup-driver", func() { o.Cgroups.CgroupDriver = c.CgroupDriver })
	set("kubeReserved", "kube-reserved", func() { o.Cgroups.KubeReserved = c.KubeReserved })
	set("systemReserved", "system-reserved", func() { o.Cgroups.SystemReserved = c.SystemReserved })
	set("enforceNodeAllocatable", "enforce-node-allocatable", func() { o.Cgroups.EnforceNodeAllocatable = c.EnforceNodeAllocatable })
	set("qosReserved", "qos-reserved", func() { o.Cgroups.QOSReserved = c.QOSReserved })
}

// cgroupPort is the host's cgroups for the agent, nil with
// --cgroups-per-qos=false; the systemd driver needs systemd as init.
func cgroupPort(o Options) (deps.Cgroups, error) {
	if !o.Cgroups.CgroupsPerQOS {
		return nil, nil
	}
	systemd := o.Cgroups.CgroupDriver == string(cgroups.DriverSystemd)
	if systemd && !realcgroups.SystemdRunning() {
		return nil, fmt.Errorf("%s, but systemd is not running on this host; use --cgroup-driver=cgroupfs", o.describe("cgroup-driver", o.Cgroups.CgroupDriver))
	}
	return realcgroups.New(systemd), nil
}

// checkCgroupDriver compares --cgroup-driver with the runtime's own
// (CRI RuntimeConfig); a runtime that does not say is trusted.
func checkCgroupDriver(ctx context.Context, rt cri.RuntimeService, o Options) error {
	if !o.Cgroups.CgroupsPerQOS {
		return nil
	}
	resp, err := rt.RuntimeConfig(ctx)
	if err != nil || resp.GetLinux() == nil {
		return nil // older runtimes do not answer: nothing to check against
	}
	theirs := string(cgroups.DriverCgroupfs)
	if resp.GetLinux().GetCgroupDriver() == runtimeapi.CgroupDriver_SYSTEMD {
		theirs = string(cgroups.DriverSystemd)
	}
	if theirs != o.Cgroups.CgroupDriver {
		return fmt.Errorf("cgroup driver mismatch: %s but the container runtime uses %s; set --cgroup-driver=%s (or change the runtime's)",
			o.describe("cgroup-driver", o.Cgroups.CgroupDriver), theirs, theirs)
	}
	return nil
}

// kernelStats reads the cgroups of a real runtime's containers, on a
// cgroup v2 host or from the v1 hierarchies (legacy or hybrid); nil for
// fakecri (its containers have no cgroups).
func kernelStats(rt Runtime, o Options) deps.CgroupStatsReader {
	if rt.Type == "fakecri" {
		return nil
	}
	driver := cgroups.Driver(o.Cgroups.CgroupDriver)
	return cgstats.Reader{
		V1:             !realcgroups.UnifiedMode(),
		PodsCgroup:     cgroups.ParseRoot(o.Cgroups.CgroupRoot).Child(cgroups.KubepodsName).Path(driver),
		SystemdRunning: realcgroups.SystemdRunning(),
	}
}
