package scenarios

import (
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/eviction"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
)

// localStorageBound is how long a pod may stay over a local storage limit
// before it must be seen evicted: one eviction period, plus the wait for
// a previous eviction's cleanup the manager may be in (at most 30 s),
// plus the status write.
const localStorageBound = evictionPeriod + 30*time.Second + 5*time.Second

// localStorageChecks is what the local storage invariants remember.
type localStorageChecks struct {
	// overSince: since when each active pod has been over a limit.
	overSince map[types.UID]time.Duration
	reported  map[types.UID]bool
}

func newLocalStorageChecks() *localStorageChecks {
	return &localStorageChecks{overSince: map[types.UID]time.Duration{}, reported: map[types.UID]bool{}}
}

// isLocalStorageEviction reports whether the pod's status says it was
// evicted for its local storage (the kubelet's three messages).
func isLocalStorageEviction(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodFailed || p.Status.Reason != eviction.Reason {
		return false
	}
	m := p.Status.Message
	return strings.HasPrefix(m, "Usage of EmptyDir volume ") || strings.HasPrefix(m, "Pod ephemeral local storage usage exceeds") ||
		(strings.HasPrefix(m, "Container ") && strings.Contains(m, " exceeded its local ephemeral storage limit "))
}

// onLocalStorageEviction checks a pod the agent just evicted for its
// local storage: it is over a limit by the simulator's truth
// (local-storage-kept), it is not critical (critical-survives), and from
// now on none of its containers may start again (evicted-stays-dead).
func (c *Checker) onLocalStorageEviction(pod *corev1.Pod) {
	ids := map[string]bool{}
	for _, ct := range c.truth().byPod[pod.UID] {
		if ct.PodUID == pod.UID {
			ids[ct.ID] = true
		}
	}
	c.pressure.evicted[pod.UID] = ids
	if refmodel.IsCritical(pod) {
		c.fail("critical-survives", "critical pod %s/%s was evicted for its local storage: %s", pod.Namespace, pod.Name, pod.Status.Message)
	}
	// Judged when the agent first stopped one of its containers (its
	// decision; usage only grows in these scenarios), as if they all ran
	// then: by now they are stopped and their volumes may be gone. Only
	// each container's latest instance counts: an earlier one was stopped
	// before the eviction (a restart, a sandbox recreated), not by it.
	latest := map[string]string{}
	for _, ct := range c.truth().byPod[pod.UID] { // sorted by attempt
		if ct.PodUID == pod.UID {
			latest[ct.Name] = ct.ID
		}
	}
	at, ok := int64(0), false
	for _, name := range slices.Sorted(maps.Keys(latest)) {
		if s, asked := c.h.Runtime.TrueStopAskedAt(latest[name]); asked && (!ok || s < at) {
			at, ok = s, true
		}
	}
	if !ok {
		at = c.h.K.Now().UnixNano()
	}
	ps := c.trueStorage(pod, at, true)
	if _, over := eviction.CheckLocalStorage(pod, ps, c.h.Runtime.Node().ImagefsCapacity > 0); !over {
		c.fail("local-storage-kept", "pod %s/%s evicted for its local storage (%q) while under every limit: %+v",
			pod.Namespace, pod.Name, pod.Status.Message, ps)
	}
}

// checkLocalStorage (every step): an active, non-critical pod over a
// local storage limit is evicted within localStorageBound
// (local-storage-evicted), unless a fault excuses the delay.
func (c *Checker) checkLocalStorage() {
	c.evaluate("local-storage")
	ls, now := c.storage, c.h.K.Elapsed()
	var active []types.UID // those that may be over a limit, judged in UID order
	for uid, pod := range c.pressure.pods {
		if pod.DeletionTimestamp != nil || refmodel.IsTerminal(pod.Status.Phase) || refmodel.IsCritical(pod) || !hasLocalStorageLimit(pod) {
			delete(ls.overSince, uid)
			continue
		}
		active = append(active, uid)
	}
	slices.Sort(active)
	for _, uid := range active {
		pod := c.pressure.pods[uid]
		v, over := c.localStorageOver(pod)
		if !over {
			delete(ls.overSince, uid)
			continue
		}
		since, ok := ls.overSince[uid]
		if !ok {
			ls.overSince[uid] = now
			continue
		}
		if now-since > localStorageBound && !ls.reported[uid] && !c.impairedWithin(localStorageBound) {
			ls.reported[uid] = true
			c.fail("local-storage-evicted", "pod %s/%s has been over a local storage limit for %v (%s) and is still %s",
				pod.Namespace, pod.Name, now-since, v.Message, pod.Status.Phase)
		}
	}
}

// localStorageOver decides, on the simulator's truth, whether pod is over
// one of its local storage limits, by the kubelet's rules.
func (c *Checker) localStorageOver(pod *corev1.Pod) (eviction.LocalStorageViolation, bool) {
	ps := c.trueStorage(pod, c.h.K.Now().UnixNano(), false)
	return eviction.CheckLocalStorage(pod, ps, c.h.Runtime.Node().ImagefsCapacity > 0)
}

// trueStorage is what pod holds on the simulated disk: its emptyDir
// volumes (files now, scripted writes as of at), its containers' log
// directories (now), and its running containers' writable layers
// (FAKECRI_DISK); allRunning counts every container as running.
func (c *Checker) trueStorage(pod *corev1.Pod, at int64, allRunning bool) eviction.PodStorage {
	node := c.h.AgentConfig().Node
	ps := eviction.PodStorage{Volumes: map[string]int64{}}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.EmptyDir == nil {
			continue
		}
		dir := podspec.VolumeDir(node.RootDir, pod.UID, v)
		bytes, _, err := c.h.Files.TreeUsage(dir)
		written := c.h.Runtime.WrittenUnderAt(dir, at)
		if err == nil || written > 0 {
			ps.Volumes[v.Name] = int64(bytes + written)
		}
	}
	running := map[string]bool{}
	for _, ct := range c.truth().byPod[pod.UID] {
		if ct.PodUID == pod.UID && ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running[ct.Name] = true
		}
	}
	logDir := podspec.LogDirectory(node.PodLogsRoot, podspec.RefOf(pod))
	for _, ctr := range pod.Spec.Containers {
		cs := eviction.ContainerStorage{Name: ctr.Name, Running: allRunning || running[ctr.Name]}
		if bytes, _, err := c.h.Files.TreeUsage(logDir + "/" + ctr.Name); err == nil {
			cs.Logs = int64(bytes)
		}
		if cs.Running {
			for _, e := range ctr.Env {
				if e.Name == "FAKECRI_DISK" {
					cs.Rootfs = quantityOr(e.Value)
				}
			}
		}
		ps.Containers = append(ps.Containers, cs)
	}
	return ps
}
