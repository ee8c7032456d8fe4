package scenarios

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/cm/cpumanager"
	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
)

// cpuOverlapSlack is how long past the reconcile period a container may
// still run on CPUs that became exclusive to another (the loop's CRI
// calls, a relist).
const cpuOverlapSlack = 5 * time.Second

// cpuChecks is what exclusive-cpus remembers.
type cpuChecks struct {
	// overlapSince: when a shared container was first seen on another
	// container's exclusive CPUs, by "shared id/exclusive id".
	overlapSince map[string]time.Duration
	reported     map[string]bool
}

func newCPUChecks() *cpuChecks {
	return &cpuChecks{overlapSince: map[string]time.Duration{}, reported: map[string]bool{}}
}

// pinned is a running container and the CPUs it runs on (fakecri's truth).
type pinned struct {
	ct   RuntimeContainer
	cpus cpuset.CPUSet
	want int // exclusive CPUs its spec asks for; 0: shared
}

// checkCPUs checks exclusive-cpus on a node under the static CPU manager
// policy, from the cpusets the runtime's containers run on: an exclusive
// container (a Guaranteed pod's, asking for whole CPUs) runs on exactly
// that many CPUs, never the reserved ones, and shares none with another
// running container of another pod; a shared container's cpuset is never
// empty and leaves another's exclusive CPUs within the reconcile period
// (while the agent runs and the runtime is healthy); and the shared pool
// (the CPUs no exclusive container holds) is never empty.
func (c *Checker) checkCPUs(truth []RuntimeContainer) {
	cfg := c.h.AgentConfig().CPUManager
	if cfg.Policy != cpumanager.PolicyStatic {
		return
	}
	var exclusive, shared []pinned
	held := cpuset.New()
	for _, ct := range truth {
		if ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		res, _ := c.h.Runtime.TrueResources(ct.ID)
		cpus, err := cpuset.Parse(res.GetCpusetCpus())
		if err != nil {
			c.reportCPUs(ct.ID+" parse", "container %s of pod %s has cpuset %q: %v", ct.Name, ct.PodUID, res.GetCpusetCpus(), err)
			continue
		}
		p := pinned{ct: ct, cpus: cpus, want: c.exclusiveCPUs(ct)}
		if p.want > 0 {
			exclusive = append(exclusive, p)
			held = held.Union(cpus)
		} else {
			shared = append(shared, p)
		}
	}
	all := cpuset.New()
	for _, cpu := range c.h.Machine().Topology {
		all = all.Union(cpuset.New(cpu.ID))
	}
	if pool := all.Difference(held); pool.IsEmpty() {
		c.reportCPUs(fmt.Sprintf("pool %s", held), "the shared pool is empty: exclusive containers hold every CPU (%s)", held)
	}
	for i, x := range exclusive {
		c.checkExclusive(x, cfg)
		for _, y := range exclusive[i+1:] {
			if x.ct.PodUID != y.ct.PodUID && !x.cpus.Intersection(y.cpus).IsEmpty() {
				c.reportCPUs(x.ct.ID+"/"+y.ct.ID, "exclusive containers %s of pod %s (%s) and %s of pod %s (%s) share CPUs",
					x.ct.Name, x.ct.PodUID, x.cpus, y.ct.Name, y.ct.PodUID, y.cpus)
			}
		}
	}
	c.checkShared(shared, exclusive, cfg)
}

// checkExclusive checks one exclusive container's cpuset.
func (c *Checker) checkExclusive(x pinned, cfg cpumanager.Config) {
	if x.cpus.Size() != x.want {
		c.reportCPUs(x.ct.ID+" size", "exclusive container %s of pod %s asks for %d CPUs but runs on %q", x.ct.Name, x.ct.PodUID, x.want, x.cpus)
	}
	if !cfg.ReservedCPUs.IsEmpty() && !x.cpus.Intersection(cfg.ReservedCPUs).IsEmpty() {
		c.reportCPUs(x.ct.ID+" reserved", "exclusive container %s of pod %s runs on reserved CPUs (%s of %s)", x.ct.Name, x.ct.PodUID, x.cpus, cfg.ReservedCPUs)
	}
}

// checkShared checks the shared containers' cpusets against the
// exclusive ones.
func (c *Checker) checkShared(shared, exclusive []pinned, cfg cpumanager.Config) {
	now := c.h.K.Elapsed()
	paused := c.h.Agent() == nil || c.suite.runtimeImpaired > now
	period := cfg.ReconcilePeriod
	if period <= 0 {
		period = cpumanager.DefaultReconcilePeriod
	}
	seen := map[string]bool{}
	for _, s := range shared {
		if s.cpus.IsEmpty() {
			c.reportCPUs(s.ct.ID+" empty", "shared container %s of pod %s runs with no cpuset", s.ct.Name, s.ct.PodUID)
			continue
		}
		for _, x := range exclusive {
			if x.ct.PodUID == s.ct.PodUID || s.cpus.Intersection(x.cpus).IsEmpty() {
				continue
			}
			key := s.ct.ID + "/" + x.ct.ID
			seen[key] = true
			since, ok := c.cpus.overlapSince[key]
			if !ok || paused {
				c.cpus.overlapSince[key] = now
				continue
			}
			if now-since > period+cpuOverlapSlack {
				c.reportCPUs(s.ct.ID+" overlap", "container %s of pod %s still runs on %s, CPUs exclusive to container %s of pod %s (%s), %v after it was seen there",
					s.ct.Name, s.ct.PodUID, s.cpus, x.ct.Name, x.ct.PodUID, x.cpus, now-since)
			}
		}
	}
	for key := range c.cpus.overlapSince {
		if !seen[key] {
			delete(c.cpus.overlapSince, key)
		}
	}
}

// exclusiveCPUs is how many exclusive CPUs a container's spec asks for
// (0 for a pod whose spec the checker has not seen: a static pod).
func (c *Checker) exclusiveCPUs(ct RuntimeContainer) int {
	pod := c.cg.pods[ct.PodUID]
	if pod == nil {
		return 0
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == ct.Name {
				return refmodel.ExclusiveCPUs(pod, &list[i])
			}
		}
	}
	return 0
}

func (c *Checker) reportCPUs(key, format string, args ...any) {
	if !c.cpus.reported[key] {
		c.cpus.reported[key] = true
		c.fail("exclusive-cpus", format, args...)
	}
}
