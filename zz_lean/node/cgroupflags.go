package main

import (
	"github.com/spf13/pflag"

	"github.com/lockstep-dev/lockstep/node/real/daemon"
)

// addCgroupFlags registers the pod and QoS cgroup flags (named like the
// kubelet's).
func addCgroupFlags(f *pflag.FlagSet, c *daemon.CgroupOptions) {
	f.BoolVar(&c.CgroupsPerQOS, "cgroups-per-qos", c.CgroupsPerQOS,
		"create the kubepods cgroup hierarchy: kubepods, kubepods/burstable, kubepods/besteffort and one cgroup per pod")
	f.StringVar(&c.CgroupRoot, "cgroup-root", c.CgroupRoot, "the cgroup the kubepods hierarchy goes under")
	f.StringVar(&c.CgroupDriver, "cgroup-driver", c.CgroupDriver,
		"cgroupfs or systemd: how cgroups are named and created; must be the container runtime's (checked at start)")
	f.StringToStringVar(&c.KubeReserved, "kube-reserved", c.KubeReserved,
		"resources reserved for Kubernetes daemons, taken out of allocatable (cpu=100m,memory=256Mi,ephemeral-storage=1Gi,pid=1000)")
	f.StringToStringVar(&c.SystemReserved, "system-reserved", c.SystemReserved,
		"resources reserved for the system's daemons, taken out of allocatable (same form as --kube-reserved)")
	f.StringSliceVar(&c.EnforceNodeAllocatable, "enforce-node-allocatable", c.EnforceNodeAllocatable,
		"pods: limit the kubepods cgroup to allocatable (else to capacity); none: enforce nothing")
	f.StringToStringVar(&c.QOSReserved, "qos-reserved", c.QOSReserved,
		"memory=N%: keep N% of the memory requested by higher QoS classes away from lower ones (QoS cgroup memory limits)")
}

// addCPUManagerFlags registers the CPU manager's flags (named like the
// kubelet's).
func addCPUManagerFlags(f *pflag.FlagSet, c *daemon.CPUManagerOptions) {
	f.StringVar(&c.Policy, "cpu-manager-policy", c.Policy,
		"none: every container shares all CPUs; static: containers of Guaranteed pods asking for whole CPUs get CPUs of their own")
	f.StringToStringVar(&c.PolicyOptions, "cpu-manager-policy-options", c.PolicyOptions,
		"static policy options: full-pcpus-only=true hands out whole physical cores only")
	f.DurationVar(&c.ReconcilePeriod, "cpu-manager-reconcile-period", c.ReconcilePeriod,
		"how often running containers' cpusets are brought in step with the CPU assignments")
	f.StringVar(&c.ReservedCPUs, "reserved-cpus", c.ReservedCPUs,
		"CPUs kept for the system and Kubernetes daemons, never exclusive (0-1,4); replaces the cpu of --kube-reserved and --system-reserved")
}

// addMemoryManagerFlags registers the memory and topology managers' flags
// (named like the kubelet's).
func addMemoryManagerFlags(f *pflag.FlagSet, c *daemon.MemoryManagerOptions) {
	f.StringVar(&c.Policy, "memory-manager-policy", c.Policy,
		"None: no NUMA placement of memory; Static: each container of a Guaranteed pod gets its memory on chosen NUMA nodes (cpuset.mems)")
	f.StringArrayVar(&c.ReservedMemory, "reserved-memory", c.ReservedMemory,
		"memory kept off each NUMA node, <node>:memory=<quantity> (0:memory=1Gi;1:memory=2Gi); under Static it must add up to kube-reserved + system-reserved + the hard eviction threshold")
	f.StringVar(&c.TopologyPolicy, "topology-manager-policy", c.TopologyPolicy,
		"none, best-effort, restricted or single-numa-node: how the CPU and memory managers' NUMA placements are aligned")
	f.StringVar(&c.TopologyScope, "topology-manager-scope", c.TopologyScope, "container (the only scope supported)")
}
