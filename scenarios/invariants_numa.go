package scenarios

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/cm/memorymanager"
	"github.com/lockstep-dev/lockstep/node/cm/topologymanager"
	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
)

// checkNUMA checks numa-aligned on a node under the Static memory
// manager policy, from the cpusets the runtime's containers run on:
// every running container of a Guaranteed pod that asks for memory has
// its memory nodes (cpuset.mems) set; under single-numa-node it is one
// node, the one all its exclusive CPUs sit on; and the memory asked for
// by the containers bound to one node never exceeds that node's
// allocatable memory.
func (c *Checker) checkNUMA(truth []RuntimeContainer) {
	cfg := c.h.AgentConfig()
	if cfg.MemoryManager.Policy != memorymanager.PolicyStatic {
		return
	}
	info := c.h.Machine()
	numaOf := map[int]int{}
	for _, cpu := range info.Topology {
		numaOf[cpu.ID] = cpu.NUMANodeID
	}
	bound := map[int]int64{}
	for _, ct := range truth {
		if ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		memory, ok := c.guaranteedMemory(ct)
		if !ok {
			continue
		}
		res, _ := c.h.Runtime.TrueResources(ct.ID)
		mems, err := cpuset.Parse(res.GetCpusetMems())
		if err != nil || mems.IsEmpty() {
			c.reportNUMA(ct.ID+" mems", "container %s of Guaranteed pod %s runs with cpuset.mems %q", ct.Name, ct.PodUID, res.GetCpusetMems())
			continue
		}
		if mems.Size() == 1 {
			bound[mems.List()[0]] += memory
		}
		if cfg.TopologyManagerPolicy != topologymanager.PolicySingleNUMANode {
			continue
		}
		if mems.Size() != 1 {
			c.reportNUMA(ct.ID+" single", "under single-numa-node container %s of pod %s has memory on NUMA nodes %s", ct.Name, ct.PodUID, mems)
			continue
		}
		if c.exclusiveCPUs(ct) == 0 {
			continue
		}
		cpus, _ := cpuset.Parse(res.GetCpusetCpus())
		for _, cpu := range cpus.List() {
			if numaOf[cpu] != mems.List()[0] {
				c.reportNUMA(ct.ID+" aligned", "under single-numa-node container %s of pod %s runs on CPUs %s but its memory is on NUMA node %s", ct.Name, ct.PodUID, cpus, mems)
				break
			}
		}
	}
	for _, n := range info.NUMANodes {
		alloc := int64(n.MemoryBytes) - int64(cfg.MemoryManager.Reserved[n.ID])
		if bound[n.ID] > alloc {
			c.reportNUMA(fmt.Sprintf("node %d over", n.ID), "containers bound to NUMA node %d ask for %d bytes, more than its %d allocatable", n.ID, bound[n.ID], alloc)
		}
	}
}

// guaranteedMemory is the memory request of a container of a Guaranteed
// pod the checker knows; false when the memory manager leaves it alone.
func (c *Checker) guaranteedMemory(ct RuntimeContainer) (int64, bool) {
	pod := c.cg.pods[ct.PodUID]
	if pod == nil || refmodel.QOSClass(pod) != corev1.PodQOSGuaranteed {
		return 0, false
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == ct.Name {
				q, ok := list[i].Resources.Requests[corev1.ResourceMemory]
				return q.Value(), ok && q.Sign() > 0
			}
		}
	}
	return 0, false
}

func (c *Checker) reportNUMA(key, format string, args ...any) {
	if !c.cpus.reported["numa "+key] {
		c.cpus.reported["numa "+key] = true
		c.fail("numa-aligned", format, args...)
	}
}
