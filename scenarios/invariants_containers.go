package scenarios

import (
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
)

// MaxCreated bounds how long a container instance may stay in Created
// (no-stuck-created). The agent starts an instance right after creating
// it; one left Created by an agent crash between the two calls, or by a
// failed StartContainer, is removed by the pod's next sync after the agent
// is back (in a new sandbox if the old one died, whatever the restart
// policy: it never ran). A finished pod's Created instances are dead ones
// and are not judged. The bound covers the
// agent's downtime in the scenarios (≤ 5 s), a relist (1 s), an error
// requeue (≤ 15 s), a stale list (≤ 3 s) and slow CRI calls, with room to
// spare, counted from the end of any runtime impairment; an instance stuck
// for good (upstream-style name clash) breaks it.
const MaxCreated = time.Minute

// containerChecks is what no-stuck-created and previous-kept remember.
type containerChecks struct {
	// createdSince: when each instance was first seen in Created.
	createdSince map[string]time.Duration
	reported     map[string]bool
	// started: per pod UID/container name, the instances whose log was
	// seen (so they started), by ID, with their attempt and log path.
	started map[string]map[string]startedInstance
}

type startedInstance struct {
	attempt uint32
	log     string
	// startedAt is when it started (unix nanoseconds; 0 if unknown).
	startedAt int64
}

func newContainerChecks() *containerChecks {
	return &containerChecks{createdSince: map[string]time.Duration{}, reported: map[string]bool{},
		started: map[string]map[string]startedInstance{}}
}

// checkContainers checks no-stuck-created and previous-kept against the
// runtime's true state and the node's files.
func (c *Checker) checkContainers() {
	if c.ctr == nil {
		c.ctr = newContainerChecks()
	}
	// An instance left Created is judged against the time at every check.
	if !c.due("containers", readsRuntime|readsAPI|readsFiles, len(c.ctr.createdSince) > 0,
		c.suite.runtimeImpaired, c.suite.viewStale, c.suite.listLag) {
		return
	}
	now := c.h.K.Elapsed()
	present := map[string]bool{}
	// latest live (not exited) instance per pod UID/container name.
	live := map[string]*runtimeapi.Container{}
	for _, ct := range c.truth().raw {
		present[ct.Id] = true
		ref, err := podstate.PodRefFromLabels(ct.Labels)
		if err != nil {
			continue
		}
		name := ct.Metadata.GetName()
		key := string(ref.UID) + "/" + name
		if c.podFinished(ref.UID) {
			// A finished pod's instances are dead, Created ones too: the
			// kubelet starts nothing of it again, and keeps them (its
			// container GC counts a Created container as dead and removes
			// a pod's last dead instances only once the pod is deleted or
			// evicted: kuberuntime_gc.go, ShouldPodContentBeRemoved).
			delete(c.ctr.createdSince, ct.Id)
		} else {
			c.checkCreated(ct, key, now)
		}
		if s, seen := c.ctr.started[key][ct.Id]; !seen || s.startedAt == 0 {
			// Not known to have started yet: its log tells.
			if log := podspec.ContainerLogFile("", ref, name, int(ct.Metadata.GetAttempt())); c.h.Files.Exists(log) {
				if c.ctr.started[key] == nil {
					c.ctr.started[key] = map[string]startedInstance{}
				}
				at, _ := c.h.Runtime.TrueStartedAt(ct.Id)
				c.ctr.started[key][ct.Id] = startedInstance{attempt: ct.Metadata.GetAttempt(), log: log, startedAt: at}
			}
		}
		if ct.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			if l := live[key]; l == nil || ct.Metadata.GetAttempt() > l.Metadata.GetAttempt() {
				live[key] = ct
			}
		}
	}
	for id := range c.ctr.createdSince {
		if !present[id] {
			delete(c.ctr.createdSince, id)
		}
	}
	// A pod none of whose sandboxes is left has left the node: a static
	// pod whose manifest comes back later (same UID) starts a new life,
	// with no previous instance to keep.
	sandboxed := map[string]bool{}
	for _, sb := range c.truth().sandboxes {
		sandboxed[sb.Labels[podstate.LabelPodUID]] = true
	}
	for key := range c.ctr.started {
		if uid, _, _ := strings.Cut(key, "/"); !sandboxed[uid] {
			delete(c.ctr.started, key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(live)) {
		c.checkPrevious(key, live[key], present)
	}
}

// podFinished reports whether the API phase of pod uid is Succeeded or
// Failed.
func (c *Checker) podFinished(uid types.UID) bool {
	phase := c.lastPhase[uid]
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}

// checkCreated is no-stuck-created for one instance.
func (c *Checker) checkCreated(ct *runtimeapi.Container, key string, now time.Duration) {
	if ct.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		delete(c.ctr.createdSince, ct.Id)
		return
	}
	since, ok := c.ctr.createdSince[ct.Id]
	if !ok {
		c.ctr.createdSince[ct.Id] = now
		return
	}
	// While the runtime is impaired (a hung status call keeps the pod's
	// cache from refreshing, a stop or start keeps failing) the agent may
	// not see the instance or act on it: the bound counts from when it can.
	if end := min(c.suite.runtimeImpaired, now); end > since {
		since = end
		c.ctr.createdSince[ct.Id] = since
	}
	if now-since > MaxCreated && !c.ctr.reported[ct.Id] {
		c.ctr.reported[ct.Id] = true
		c.fail("no-stuck-created", "container %s (%s, attempt %d) has been Created for %v (bound %v)",
			key, ct.Id, ct.Metadata.GetAttempt(), now-since, MaxCreated)
	}
}

// checkPrevious is previous-kept for the live instance of one container:
// the newest instance started before it must still be in the runtime,
// and its log must still be there.
func (c *Checker) checkPrevious(key string, latest *runtimeapi.Container, present map[string]bool) {
	var prevID string
	var prev startedInstance
	for id, s := range c.ctr.started[key] {
		if s.attempt < latest.Metadata.GetAttempt() && (prevID == "" || s.attempt > prev.attempt) {
			prevID, prev = id, s
		}
	}
	if prevID == "" || c.ctr.reported[prevID] {
		return
	}
	switch {
	case !present[prevID] && c.removedOnStaleView(key, prevID, prev):
		c.ctr.reported[prevID] = true // not a failure: judged once
	case !present[prevID]:
		c.ctr.reported[prevID] = true
		c.fail("previous-kept", "container %s: previous instance %s (attempt %d) removed while attempt %d is %v",
			key, prevID, prev.attempt, latest.Metadata.GetAttempt(), latest.State)
	case !c.h.Files.Exists(prev.log):
		c.ctr.reported[prevID] = true
		c.fail("previous-kept", "container %s: log %s of the previous instance (attempt %d) removed while attempt %d is %v",
			key, prev.log, prev.attempt, latest.Metadata.GetAttempt(), latest.State)
	}
}

// removedOnStaleView reports whether the agent decided to stop (and
// remove) instance id of container key (pod UID/name) while the runtime's
// lists lagged, so soon after it started that the lists may still have
// shown it Created: the agent then clears it away as an instance left
// Created by a crashed sync. The runtime sees the stop asked only after
// the container's preStop hook, which may take the pod's grace period.
func (c *Checker) removedOnStaleView(key, id string, s startedInstance) bool {
	// The hook's time: the stop is asked up to the grace period after the
	// agent decided it.
	var hook time.Duration
	uid, name, _ := strings.Cut(key, "/")
	if spec := c.suite.specs[types.UID(uid)]; spec != nil && hasPreStop(spec, name) {
		hook = time.Duration(refmodel.SpecGracePeriod(&corev1.Pod{Spec: *spec})) * time.Second
	}
	asked, ok := c.h.Runtime.TrueStopAskedAt(id)
	if !ok || s.startedAt == 0 || c.suite.viewStale == 0 || c.elapsedAt(asked) > addSat(c.suite.viewStale, hook) {
		return false
	}
	// The agent acts on a relist up to a period (1 s) and a sync step old.
	return time.Duration(asked-s.startedAt) <= c.suite.listLag+2*time.Second+hook
}

// hasPreStop reports whether container name of spec has a preStop hook.
func hasPreStop(spec *corev1.PodSpec, name string) bool {
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return list[i].Lifecycle != nil && list[i].Lifecycle.PreStop != nil
			}
		}
	}
	return false
}
