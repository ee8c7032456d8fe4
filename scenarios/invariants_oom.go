package scenarios

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// oomReportedIn is how long after an OOM kill its pod's status must show
// it (a relist, a sync and a status write), faults aside.
const oomReportedIn = 30 * time.Second

// oomKill is a container the runtime OOM-killed.
type oomKill struct {
	pod      types.UID
	name     string
	at       time.Duration
	reported bool
}

// checkOOM records the runtime's OOM kills and, once oomReportedIn has
// passed, fails oom-reported for one its pod's status never showed (while
// the pod is still there and not being deleted, and the agent could
// write).
func (c *Checker) checkOOM(truth []RuntimeContainer) {
	now := c.h.K.Elapsed()
	c.evaluate("oom")
	exits := truth
	if !c.changed("oom", readsRuntime, false) {
		exits = nil // no exit since the last look
	}
	for _, ct := range exits {
		if ct.State != runtimeapi.ContainerState_CONTAINER_EXITED || c.ooms[ct.ID] != nil {
			continue
		}
		if exit, ok := c.h.Runtime.TrueExit(ct.ID); ok && exit.Reason == "OOMKilled" {
			c.ooms[ct.ID] = &oomKill{pod: ct.PodUID, name: ct.Name, at: now}
		}
	}
	for id, k := range c.ooms {
		if k.reported || now-k.at < oomReportedIn {
			continue
		}
		pod := c.pressure.pods[k.pod]
		if pod == nil || pod.DeletionTimestamp != nil || c.pressure.evicted[k.pod] != nil || c.impairedWithin(oomReportedIn) {
			k.reported = true // excused
			continue
		}
		k.reported = true
		c.fail("oom-reported", "container %s (%s) of pod %s/%s was OOM-killed %v ago and its status never said so",
			k.name, id, pod.Namespace, pod.Name, now-k.at)
	}
}

// onWriteOOM: a status that reports an OOM-killed container instance
// reports it terminated with reason OOMKilled and exit code 137.
func (c *Checker) onWriteOOM(r apiserver.Record) {
	if r.Kind != apiserver.KindPod || r.Pod == nil {
		return
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), r.Pod.Status.InitContainerStatuses...), r.Pod.Status.ContainerStatuses...) {
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t == nil {
				continue
			}
			id := strings.TrimPrefix(t.ContainerID, "fakecri://")
			k := c.ooms[id]
			if k == nil {
				// The write may come before the next check sees the kill.
				if exit, ok := c.h.Runtime.TrueExit(id); !ok || exit.Reason != "OOMKilled" {
					continue
				}
				k = &oomKill{pod: r.Pod.UID, name: cs.Name, at: c.h.K.Elapsed()}
				c.ooms[id] = k
			}
			k.reported = true
			if t.Reason != "OOMKilled" || t.ExitCode != 137 {
				c.fail("oom-reported", "OOM-killed container %s of pod %s/%s reported terminated %q, exit %d", cs.Name, r.Pod.Namespace, r.Pod.Name, t.Reason, t.ExitCode)
			}
		}
	}
}
