package scenarios

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/stats"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// statsScenario runs the agent against a runtime like containerd 1.6 on
// these hosts (no sandbox stats, no CPU rate), so that every CPU rate the
// stats report is the agent's own arithmetic over two samples: busy pods
// come and go through agent crashes, runtime restarts and stale lists, and
// stats-rate checks every rate against the scripted load.
func statsScenario() Scenario {
	return Scenario{Name: "stats",
		Doc: "busy pods on a runtime without sandbox stats or CPU rates, through crashes, runtime restarts and stale lists: every CPU rate the agent computes matches the scripted load (stats-rate)",
		Mix: map[string]int{"create-busy": 5, "create": 1, "delete": 2, "crash": 1, "runtime-restart": 1, "stale-list": 1, "wait": 3},
		Configure: func(c *harness.Config) {
			c.Runtime.NoSandboxStats, c.Runtime.NoNanoCores = true, true
			c.KernelStats = true
		},
	}
}

// opCreateBusy creates a pod whose container app burns a×50m of CPU and
// logs a line a second, beside a container side burning b×10m.
func opCreateBusy(r *run, a [3]int) error {
	name := fmt.Sprintf("p%d", r.step)
	pod := NewPod(name, r.h.NodeName,
		Env("app", "FAKECRI_CPU", fmt.Sprintf("%dm", 50*a[0])), Env("app", "FAKECRI_MEMORY", "16Mi"),
		Env("app", "FAKECRI_LOG", "busy"), Env("app", "FAKECRI_LOG_EVERY", time.Second.String()),
		Env("side", "FAKECRI_CPU", fmt.Sprintf("%dm", 10*a[1])),
		// The node suite's limit: 80000000 bytes, not a page multiple.
		Resources("app", "", "", "", "80M"))
	if _, err := Create(r.h, pod); err != nil {
		return err
	}
	r.created = append(r.created, name)
	return nil
}

// checkStatsRate checks stats-rate on the agent's latest sample: every
// CPU rate of a container, the runtime's or (when it gives none, as under
// NoNanoCores) the one the agent computed from two samples, is the
// container's scripted CPU (FAKECRI_CPU in its pod's spec, 0 without),
// within a millicore (integer rounding over short intervals).
func (c *Checker) checkStatsRate() {
	a := c.h.Agent()
	if a == nil {
		return
	}
	s, ok := a.Stats().Latest()
	if !ok || s.Time.Equal(c.statsChecked) {
		return // checked already
	}
	c.statsChecked = s.Time
	c.checkStatsMemoryLimit(s)
	labels := map[string]map[string]string{}
	for _, ct := range s.Containers {
		labels[ct.GetId()] = ct.GetLabels()
	}
	for _, cs := range s.ContainerStats {
		nc := cs.GetCpu().GetUsageNanoCores()
		if nc == nil {
			continue
		}
		id := cs.GetAttributes().GetId()
		l := labels[id]
		want, known := c.scriptedCPU(types.UID(l[podstate.LabelPodUID]), l[podstate.LabelPodNamespace], l[podstate.LabelPodName], l[podstate.LabelContainerName])
		if !known {
			continue
		}
		got := int64(nc.GetValue())
		if diff := got - want; diff > 1_000_000 || diff < -1_000_000 {
			c.fail("stats-rate", "container %s (%s of pod %s/%s) at %v: %d nanocores, its script burns %d",
				id, l[podstate.LabelContainerName], l[podstate.LabelPodNamespace], l[podstate.LabelPodName],
				time.Unix(0, cs.GetCpu().GetTimestamp()).UTC().Format(time.RFC3339Nano), got, want)
		}
	}
}

// checkStatsMemoryLimit checks stats-memory-limit on a new sample that
// carries the kernel's figures: in the Summary the agent serves of it,
// every running container's memory available plus its working set is the
// limit the simulated kernel holds for its cgroup (the limit the runtime
// was given, rounded down to a page: harness.KernelMemoryLimit), not the
// spec's unrounded bytes.
func (c *Checker) checkStatsMemoryLimit(s stats.Sample) {
	if s.Kernel == nil {
		return
	}
	ids := map[[2]string]string{} // pod UID, container name → running ID
	var pods []*corev1.Pod
	seen := map[types.UID]bool{}
	for _, ct := range s.Containers {
		if ct.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		l := ct.GetLabels()
		uid := types.UID(l[podstate.LabelPodUID])
		ids[[2]string{string(uid), l[podstate.LabelContainerName]}] = ct.GetId()
		if pod, ok := APIPod(c.h, l[podstate.LabelPodNamespace], l[podstate.LabelPodName]); ok && pod.UID == uid && !seen[uid] {
			seen[uid] = true
			pods = append(pods, pod)
		}
	}
	for _, ps := range s.Summary(c.h.NodeName, pods).Pods {
		for _, cs := range ps.Containers {
			id := ids[[2]string{ps.PodRef.UID, cs.Name}]
			res, ok := c.h.Runtime.TrueContainerResources(id)
			if !ok || res.GetMemoryLimitInBytes() <= 0 || cs.Memory == nil || cs.Memory.WorkingSetBytes == nil {
				continue
			}
			want := harness.KernelMemoryLimit(res.GetMemoryLimitInBytes())
			ws := *cs.Memory.WorkingSetBytes
			if ws > want {
				continue
			}
			if cs.Memory.AvailableBytes == nil || *cs.Memory.AvailableBytes+ws != want {
				c.fail("stats-memory-limit", "container %s (%s of pod %s/%s) at %v: available %v + working set %d is not its cgroup's limit %d (the runtime's %d rounded down to a page)",
					id, cs.Name, ps.PodRef.Namespace, ps.PodRef.Name, s.Time.UTC().Format(time.RFC3339Nano),
					fmtPtr(cs.Memory.AvailableBytes), ws, want, res.GetMemoryLimitInBytes())
			}
		}
	}
}

// fmtPtr prints a *uint64, "nil" for nil.
func fmtPtr(v *uint64) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprint(*v)
}

// scriptedCPU returns the CPU rate, in nanocores, that a container's
// FAKECRI_CPU scripts, from its pod's spec in the API; false when the pod
// (of that UID) or the container is not there any more.
func (c *Checker) scriptedCPU(uid types.UID, namespace, name, container string) (int64, bool) {
	pod, ok := APIPod(c.h, namespace, name)
	if !ok || pod.UID != uid {
		return 0, false
	}
	var spec *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == container {
			spec = &pod.Spec.Containers[i]
		}
	}
	if spec == nil {
		return 0, false
	}
	for _, e := range spec.Env {
		if e.Name == "FAKECRI_CPU" {
			q, err := resource.ParseQuantity(e.Value)
			if err != nil {
				return 0, false
			}
			return q.MilliValue() * 1_000_000, true
		}
	}
	return 0, true
}
