package scenarios

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// readyAtOnceSlack bounds what the agent adds to the readiness probe's own
// timeout between the status that first shows an instance started and
// the one that shows it ready: the probe's result waking the pod's
// status, its write, the checker's step. Far less than any readiness
// period a scenario draws past a second or two: a probe left to its next
// tick would take up to that period.
const readyAtOnceSlack = 1500 * time.Millisecond

// readyAtOnce is readiness-at-once's obligation for one instance whose
// started status the agent wrote: its Ready=True status by deadline, if
// its readiness endpoint answers healthy meanwhile.
type readyAtOnce struct {
	pi *probedInstance
	// from: when the started status was written; deadline: the bound.
	from, deadline time.Duration
	// agent: the agent instance (Harness.Restarts) that wrote it.
	agent int
	ready bool
}

// expectReadyAtOnce records readiness-at-once's obligation for instance
// id (pi) of a container with a startup and a readiness probe, whose
// started status the agent wrote now: upstream's kubelet runs a started
// instance's readiness probe at once when the status it generates finds
// it not ready (UpdatePodStatus wakes the readiness worker), so Ready=True
// follows within the probe's timeout, not a period later — when one
// success is enough (successThreshold 1) and the initial delay, counted
// from the start, has passed (before it the worker does not probe, and
// the wake is lost: its next tick probes, upstream as here).
func (c *Checker) expectReadyAtOnce(id string, pi *probedInstance, spec *corev1.Container, now time.Duration) {
	rp := spec.ReadinessProbe
	if rp == nil || spec.StartupProbe == nil || rp.SuccessThreshold > 1 {
		return
	}
	_, timeout, delay, _, _ := probeTiming(rp)
	if now < pi.started+delay {
		// The worker does not probe before the delay, and the status
		// that wakes it comes before: its next tick probes.
		return
	}
	c.probes.atOnce[id] = &readyAtOnce{pi: pi, from: now, deadline: now + timeout + readyAtOnceSlack, agent: c.h.Restarts()}
}

// noteReady records that the agent wrote instance id ready.
func (c *Checker) noteReady(id string) {
	if o := c.probes.atOnce[id]; o != nil {
		o.ready = true
	}
}

// checkReadyAtOnce is readiness-at-once: every obligation whose deadline
// passed was met (the instance written ready by then). Not owed when the
// readiness endpoint answered unhealthy (or hung) at some instant from a
// second before the probe could run to the deadline, the instance
// stopped, the pod is being deleted, the agent changed, or the runtime
// or API was impaired since.
func (c *Checker) checkReadyAtOnce() {
	pc, now := c.probes, c.h.K.Elapsed()
	for _, id := range slices.Sorted(maps.Keys(pc.atOnce)) { // in order: the trace must not depend on the map's
		o := pc.atOnce[id]
		if o.ready {
			delete(pc.atOnce, id)
			continue
		}
		if now <= o.deadline {
			continue
		}
		delete(pc.atOnce, id)
		pi := o.pi
		spec := c.containerSpec(pi.uid, pi.name)
		if spec == nil || pi.gone || c.deletingPod(pi.uid) || c.h.Agent() == nil || c.h.Restarts() != o.agent ||
			c.suite.runtimeImpaired >= o.from-time.Second || c.unhealthyWithin(id, spec.ReadinessProbe, o.from-time.Second, o.deadline) {
			continue
		}
		c.fail("readiness-at-once", "container %s of pod %s (%s) was written started at +%v but not ready by +%v though its readiness endpoint answered healthy throughout: a started instance's readiness is probed at once, not at its next period",
			pi.name, pi.uid, id, o.from, o.deadline)
	}
}
