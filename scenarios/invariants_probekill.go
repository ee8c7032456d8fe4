package scenarios

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

// probeRestartSlack bounds how long after a probe-killed instance exited
// its next instance starts, in a quiet world: the kubelet starts it in
// the sync that killed it (the image check, CreateContainer and
// StartContainer follow the kill), and the checker sees it at its next
// step.
const probeRestartSlack = 5 * time.Second

// probeRestart is probe-restarts' obligation for one probe-killed
// instance: a newer attempt of the container must start by deadline.
type probeRestart struct {
	uid      types.UID
	name     string
	id       string
	attempt  uint32
	deadline time.Duration
	// agent: the agent instance (Harness.Restarts) that killed it.
	agent int
}

// expectProbeRestart records probe-restarts' obligation for instance id
// (pi), which the agent stopped (asked at killed, exited at finished)
// for its liveness or startup probe, when the kubelet's rules say it is
// started again at once. computePodActions puts a running container it
// kills for a probe in ContainersToStart unless its restart policy (its
// own, else the pod's; its restart rules are not consulted: it has not
// exited) is Never, whatever exit code the kill brings: a process that
// exits 0 on SIGTERM under OnFailure runs again. That start goes through
// the crash-loop back-off (doBackOff), judged on the newest instance that
// had exited before the kill in the pod status of the sync that killed
// it (what the runtime held when the stop was asked, whether removed
// since or not): with none, it goes at once;
// so it does when that instance finished more than the longest back-off
// (300 s) before. In between the back-off may hold it (and a held
// instance that exited 0 under OnFailure is then never restarted, as
// upstream's ShouldContainerBeRestarted says): no obligation. Never:
// never-restart already forbids another start.
func (c *Checker) expectProbeRestart(id string, pi *probedInstance, killed, finished time.Duration) {
	pod := c.probes.pods[pi.uid]
	spec := c.containerSpec(pi.uid, pi.name)
	if pod == nil || spec == nil || c.h.Agent() == nil {
		return
	}
	policy := string(pod.Spec.RestartPolicy)
	if spec.RestartPolicy != nil {
		policy = string(*spec.RestartPolicy)
	}
	if policy == string(corev1.RestartPolicyNever) {
		return
	}
	attempt, ok := uint32(0), false
	for _, ct := range c.truth().raw {
		if ct.Id == id {
			attempt, ok = ct.Metadata.GetAttempt(), true
		}
	}
	if !ok {
		return
	}
	// The instances the kill's sync saw are those the runtime held when
	// it asked the stop, not those it holds now: the container garbage
	// collector may remove the earlier exited instance as soon as the
	// killed one has exited (it keeps the newest dead instance per
	// container), before the checker sees that exit.
	for _, ex := range c.h.Runtime.TrueExitedAt(c.epoch().Add(killed).UnixNano()) {
		ref, err := podstate.PodRefFromLabels(ex.Labels)
		if err != nil || ref.UID != pi.uid || ex.Name != pi.name || ex.Attempt >= attempt {
			continue
		}
		if killed-c.elapsedAt(ex.FinishedAt) <= crashBackoffMax {
			return // the back-off may hold the start
		}
	}
	c.probes.owed = append(c.probes.owed, probeRestart{uid: pi.uid, name: pi.name, id: id, attempt: attempt,
		deadline: finished + probeRestartSlack, agent: c.h.Restarts()})
}

// checkProbeRestarts is probe-restarts: every obligation is met (a newer
// attempt of the container runs or ran) by its deadline, unless the world
// was not quiet meanwhile: the agent restarted or went down (a new agent
// sees an exit 0 under OnFailure and, as the kubelet, leaves it), the
// runtime was impaired or its lists stale (the start may fail, and the
// next sync judges the exit code), the pod is being deleted or failed
// (probeRestartVoid) or its sandbox is replaced.
func (c *Checker) checkProbeRestarts(truth []RuntimeContainer) {
	pc, now := c.probes, c.h.K.Elapsed()
	kept := pc.owed[:0]
	for _, o := range pc.owed {
		switch {
		case c.h.Agent() == nil || c.h.Restarts() != o.agent || c.probeRestartVoid(o.uid) ||
			now <= addSat(max(c.suite.runtimeImpaired, c.suite.viewStale), probeRestartSlack):
			continue // excused
		case c.newerAttempt(truth, o):
			continue // met
		case now > o.deadline:
			c.fail("probe-restarts", "container %s/%s (%s, attempt %d) killed for its probe under a restart policy other than Never was not started again within %v of its exit",
				o.uid, o.name, o.id, o.attempt, probeRestartSlack)
			continue
		}
		kept = append(kept, o)
	}
	pc.owed = kept
}

// probeRestartVoid reports whether pod uid no longer owes probe-restarts'
// starts: it is being deleted, or it failed (its active deadline, an
// eviction). Unlike deletingPod it does not take Succeeded as a reason:
// a pod that owes a probe-killed container's start had that container
// restarted in the kill's sync upstream, so it cannot have succeeded;
// Succeeded there is the missing restart's own consequence (an OnFailure
// container that exited 0 on SIGTERM, left as done).
func (c *Checker) probeRestartVoid(uid types.UID) bool {
	p := c.probes.pods[uid]
	return p == nil || p.DeletionTimestamp != nil || c.lastPhase[uid] == corev1.PodFailed
}

// newerAttempt reports whether the runtime holds an attempt of o's
// container newer than o's instance.
func (c *Checker) newerAttempt(truth []RuntimeContainer, o probeRestart) bool {
	for _, ct := range truth {
		if ct.PodUID == o.uid && ct.Name == o.name && ct.Attempt > o.attempt {
			return true
		}
	}
	return false
}
