package scenarios

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/node/cm/cpumanager"
	"github.com/lockstep-dev/lockstep/node/cm/memorymanager"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// PinnedPod returns a Guaranteed pod whose container app asks for cpus
// whole CPUs (exclusive under the static CPU manager policy), shaped by
// shape%3: app alone; app beside a web container asking for 250m (shared
// CPUs); or after an init container asking for one CPU more (whose CPUs
// app reuses). With shape >= 3 the pod runs to completion (app exits 0
// after a few seconds, restartPolicy OnFailure).
func PinnedPod(name, node string, cpus, shape int) *corev1.Pod {
	n := fmt.Sprint(cpus)
	opts := []PodOption{Resources("app", n, "32Mi", n, "32Mi")}
	switch pick(shape, 3) {
	case 1:
		opts = append(opts, Resources("web", "250m", "16Mi", "250m", "16Mi"))
	case 2:
		more := fmt.Sprint(cpus + 1)
		opts = append([]PodOption{Init("prep", time.Second, 0), Resources("prep", more, "32Mi", more, "32Mi")}, opts...)
	}
	if shape >= 3 {
		opts = append(opts, Restart(corev1.RestartPolicyOnFailure), Exits("app", time.Duration(2+cpus)*time.Second, 0))
	}
	return NewPod(name, node, opts...)
}

func opCreatePinned(r *run, a [3]int) error {
	name := fmt.Sprintf("p%d", r.step)
	if _, err := Create(r.h, PinnedPod(name, r.h.NodeName, a[0], a[1])); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}

// StaticCPUNode configures a simulated node for the static CPU manager
// policy: 2 sockets of 2 NUMA nodes of 2 cores of 2 threads (16 CPUs),
// CPU 0 reserved (and out of allocatable).
func StaticCPUNode(cfg *harness.Config) {
	cfg.CPUs = harness.Topology(2, 2, 2, 2)
	cfg.Agent.CPUManager = cpumanager.Config{Policy: cpumanager.PolicyStatic, NumReservedCPUs: 1}
	cfg.Agent.NodeStatus.Reserved = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
}

// NUMANode configures a simulated node for NUMA alignment: the static CPU
// manager node of StaticCPUNode, the Static memory manager (2 GiB per
// NUMA node, node 0 keeping the 100 MiB of the hard eviction threshold)
// and the given topology manager policy.
func NUMANode(policy string) func(*harness.Config) {
	return func(cfg *harness.Config) {
		StaticCPUNode(cfg)
		cfg.Agent.MemoryManager = memorymanager.Config{Policy: memorymanager.PolicyStatic, Reserved: map[int]uint64{0: 100 << 20}}
		cfg.Agent.TopologyManagerPolicy = policy
	}
}
