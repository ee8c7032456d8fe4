package scenarios

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// minStopTimeout is the least time the agent gives a container to stop
// after SIGTERM, whatever the grace (runtimesync.MinStopTimeout).
const minStopTimeout = 2 * time.Second

// leaseRecovery is how long after the API comes back the agent has to renew
// its lease: a renew interval (10 s) plus the back-off of its retries.
const leaseRecovery = 20 * time.Second

// forever is an excuse that lasts until the world heals.
const forever = time.Duration(math.MaxInt64)

// suiteState is what sigterm-first, lease-fresh and the fault excuses of
// grace-honoured remember.
type suiteState struct {
	// specs: the latest spec seen of every pod, by UID.
	specs map[types.UID]*corev1.PodSpec
	// killed: containers already reported by sigterm-first.
	killed map[string]bool
	// runtimeImpaired: until then the runtime may not be able to stop a
	// container (hung, not ready, restarting): grace-honoured deadlines
	// move past it.
	runtimeImpaired time.Duration
	// runtimeImpairedFinite is the latest end of the impairments with an
	// end (forever ones aside): Healed ends runtimeImpaired there, not
	// before (a fault served just before the heal still delays the
	// agent's retry).
	runtimeImpairedFinite time.Duration
	// viewStale: until then the runtime's lists may lag (stale relists):
	// a kill may miss a container the view does not show yet, which the
	// sandbox's stop then SIGKILLs (sigterm-first is not checked).
	viewStale time.Duration
	// listLag is the largest lag of the runtime's lists while viewStale.
	listLag time.Duration
	// leaseExcused: until then the lease may go stale (API down or
	// faulty, agent down).
	leaseExcused time.Duration
	// sourceFailing: until the world heals, the agent's list and watch
	// calls may fail (api-flaky): its pod source may be backing off when
	// it does.
	sourceFailing bool
	// impairments: the runtime stalls so far (RuntimeStalled), merged,
	// in order.
	impairments []span
	// pendingFaults: faults that impair the runtime or the API for as
	// long as they report pending (injected errors not yet served), and
	// a retry back-off after.
	pendingFaults []pendingFault
}

// span is an interval of time since the start.
type span struct{ from, to time.Duration }

// pendingFault is an injected fault whose errors wait for the agent's
// calls: while pending reports true, excuse runs at every check.
type pendingFault struct {
	pending func() bool
	excuse  func()
}

func newSuiteState() *suiteState {
	return &suiteState{specs: map[types.UID]*corev1.PodSpec{}, killed: map[string]bool{}}
}

// RuntimeImpaired tells the checker the runtime may not stop containers for
// d from now (forever: until Healed): a deletion's grace counts from when
// the runtime can act again.
func (c *Checker) RuntimeImpaired(d time.Duration) {
	c.impairRuntimeUntil(addSat(c.h.K.Elapsed(), d))
}

// impairRuntimeUntil moves runtimeImpaired to end, if later.
func (c *Checker) impairRuntimeUntil(end time.Duration) {
	c.suite.runtimeImpaired = max(c.suite.runtimeImpaired, end)
	if end != forever {
		c.suite.runtimeImpairedFinite = max(c.suite.runtimeImpairedFinite, end)
	}
}

// RuntimeStalled tells the checker the agent's calls to the runtime may
// fail or hang for d from now (injected errors, hung calls, a stalled
// relist, a runtime not ready): the runtime is impaired, and an action
// the agent carries out then, or just after, may carry a decision made
// any time since the stall began.
func (c *Checker) RuntimeStalled(d time.Duration) {
	c.RuntimeImpaired(d)
	now := c.h.K.Elapsed()
	end := addSat(now, d)
	if n := len(c.suite.impairments); n > 0 && now <= c.suite.impairments[n-1].to {
		c.suite.impairments[n-1].to = max(c.suite.impairments[n-1].to, end)
		return
	}
	c.suite.impairments = append(c.suite.impairments, span{now, end})
}

// impairedAround returns when the runtime stall that t falls in (or
// ended at most slack before t) began, and whether there is one.
func (c *Checker) impairedAround(t, slack time.Duration) (time.Duration, bool) {
	for _, s := range c.suite.impairments {
		if s.from <= t && t <= addSat(s.to, slack) {
			return s.from, true
		}
	}
	return 0, false
}

// stepRetry is how long after a failed pod worker step the agent tries it
// again at the latest: podworkers' BackoffPeriod (10 s) jittered by up to
// half, plus the sync loop tick (1 s) that drains the work queue.
const stepRetry = 16 * time.Second

// RuntimeImpairedWhile tells the checker the runtime may not stop
// containers while pending reports true (injected errors not all served
// yet: they fail calls only as the agent makes them), nor until the
// agent's next retry after: a deletion's grace counts from then.
func (c *Checker) RuntimeImpairedWhile(pending func() bool) {
	c.suite.pendingFaults = append(c.suite.pendingFaults, pendingFault{pending, func() { c.RuntimeStalled(stepRetry) }})
	c.excusePending()
}

// RuntimeSlowWhile tells the checker the runtime's calls may each take up
// to d while pending reports true (injected latency not all served yet),
// and the last of them up to d after: a deletion's grace counts from then.
func (c *Checker) RuntimeSlowWhile(pending func() bool, d time.Duration) {
	c.suite.pendingFaults = append(c.suite.pendingFaults, pendingFault{pending, func() { c.RuntimeStalled(d) }})
	c.excusePending()
}

// APIImpairedWhile tells the checker the agent's API writes may fail
// while pending reports true (injected failures or conflicts not yet
// served: they hit writes only as the agent makes them), and the lease
// may be stale until leaseRecovery after.
func (c *Checker) APIImpairedWhile(pending func() bool) {
	c.suite.pendingFaults = append(c.suite.pendingFaults, pendingFault{pending, func() { c.APIImpaired(0) }})
	c.excusePending()
}

// excusePending extends the impairments past every fault still pending,
// and forgets those that are not.
func (c *Checker) excusePending() {
	kept := c.suite.pendingFaults[:0]
	for _, f := range c.suite.pendingFaults {
		if f.pending() {
			f.excuse()
			kept = append(kept, f)
		}
	}
	clear(c.suite.pendingFaults[len(kept):])
	c.suite.pendingFaults = kept
}

// APIImpaired tells the checker the agent may not reach the API for d from
// now (forever: until Healed): the lease may go stale meanwhile and
// deletions may reach the agent late.
func (c *Checker) APIImpaired(d time.Duration) {
	end := addSat(c.h.K.Elapsed(), d)
	c.suite.leaseExcused = max(c.suite.leaseExcused, addSat(end, leaseRecovery))
	c.impairRuntimeUntil(end)
}

// sourceRecovery is how long after the API comes back the agent may take
// to learn of what changed while it was down: its pod source relists
// after failures with a back-off of up to 30 s (podsource's backoffMax,
// like client-go's reflector), plus a second for the list and watch.
const sourceRecovery = 31 * time.Second

// APIDown tells the checker the API is down for d from now: the agent may
// not reach it (APIImpaired), and learns of deletions made meanwhile or
// just after only when its pod source's next relist comes, up to
// sourceRecovery later: their grace counts from then.
func (c *Checker) APIDown(d time.Duration) {
	c.APIImpaired(d)
	c.RuntimeImpaired(addSat(d, sourceRecovery))
}

// APIFailing tells the checker a share of the agent's API calls fail
// until the world heals: the API is impaired, and its pod source, backing
// off failed relists, may learn of deletions up to sourceRecovery after.
func (c *Checker) APIFailing() {
	c.APIImpaired(forever)
	c.suite.sourceFailing = true
}

// RuntimeViewStale tells the checker the runtime's lists lag by lag until
// the world heals: the runtime is impaired, a kill may miss a container,
// and a container started less than lag ago may still look Created.
func (c *Checker) RuntimeViewStale(lag time.Duration) {
	c.RuntimeImpaired(forever)
	c.suite.viewStale = forever
	c.suite.listLag = max(c.suite.listLag, lag)
}

// Healed ends every open-ended excuse: the faults are gone from now.
func (c *Checker) Healed() {
	now := c.h.K.Elapsed()
	if c.suite.runtimeImpaired == forever {
		c.suite.runtimeImpaired = max(now, c.suite.runtimeImpairedFinite)
	}
	for i := range c.suite.impairments {
		if c.suite.impairments[i].to == forever {
			c.suite.impairments[i].to = max(now, c.suite.impairments[i].from)
		}
	}
	if c.suite.leaseExcused == forever {
		c.suite.leaseExcused = now + leaseRecovery
	}
	if c.suite.viewStale == forever {
		c.suite.viewStale = now
	}
	if c.suite.sourceFailing {
		c.suite.sourceFailing = false
		c.RuntimeImpaired(sourceRecovery)
	}
	c.healReady()
}

func addSat(a, b time.Duration) time.Duration {
	if b >= forever-a {
		return forever
	}
	return a + b
}

// onWriteSuite remembers pod specs.
func (c *Checker) onWriteSuite(r apiserver.Record) {
	if r.Kind == apiserver.KindPod && r.Pod != nil {
		c.suite.specs[r.UID] = &r.Pod.Spec
	}
}

// checkSuite runs the checks of this file against the runtime's truth.
func (c *Checker) checkSuite(truth []RuntimeContainer) {
	c.excuseGrace()
	if c.due("sigterm-first", readsRuntime|readsAPI, false) {
		c.checkSigtermFirst(truth)
	}
	c.evaluate("lease-fresh")
	c.checkLeaseFresh()
	c.evaluate("client-cert")
	c.checkClientCert()
}

// excuseGrace moves grace-honoured deadlines past a runtime impairment:
// the grace period counts again from when the runtime can act.
func (c *Checker) excuseGrace() {
	c.excusePending()
	until := min(c.suite.runtimeImpaired, c.h.K.Elapsed())
	if until == 0 {
		return
	}
	for _, d := range c.term.deletions {
		d.deadline = max(d.deadline, until+d.bound+graceSlack)
	}
}

// checkSigtermFirst: a container that exits within the time it is given
// after SIGTERM is never SIGKILLed. A container that honours SIGTERM and
// stops in under the agent's least stop timeout must never exit with 137
// unless OOM-killed; one that takes longer must not be SIGKILLed when
// every grace period its pod was given was longer than its stop time.
func (c *Checker) checkSigtermFirst(truth []RuntimeContainer) {
	for _, ct := range truth {
		key := string(ct.PodUID) + "/" + ct.ID
		if ct.State != runtimeapi.ContainerState_CONTAINER_EXITED || c.suite.killed[key] {
			continue
		}
		spec := c.suite.specs[ct.PodUID]
		if spec == nil {
			continue
		}
		stop, honours := stopBehaviour(spec, ct.Name)
		if !honours {
			continue
		}
		exit, ok := c.h.Runtime.TrueExit(ct.ID)
		if !ok || exit.Code != 137 || exit.Reason == "OOMKilled" {
			continue
		}
		c.suite.killed[key] = true
		if c.pressure.evicted[ct.PodUID] != nil {
			continue // evicted: stopped with the eviction's grace (1 s for a hard threshold)
		}
		if c.suite.viewStale > 0 && c.h.K.Elapsed() <= addSat(c.suite.viewStale, graceSlack+restartSlack) {
			continue // the kill may have been decided on what an impaired runtime said
		}
		grace := time.Duration(1 << 62)
		if spec.TerminationGracePeriodSeconds != nil {
			grace = time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
		}
		if d := c.term.deletions[ct.PodUID]; d != nil {
			grace = min(grace, time.Duration(d.grace)*time.Second)
		}
		if stop >= minStopTimeout && stop+time.Second >= grace {
			continue
		}
		c.fail("sigterm-first", "container %s (%s) of pod %s stops %v after SIGTERM (grace %v) but was SIGKILLed", ct.Name, ct.ID, ct.PodUID, stop, grace)
	}
}

// stopBehaviour reads how a fake-runtime container reacts to SIGTERM: how
// long it takes to exit, and whether it exits at all.
func stopBehaviour(spec *corev1.PodSpec, name string) (time.Duration, bool) {
	for _, ctr := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
		if ctr.Name != name {
			continue
		}
		stop := time.Duration(0)
		for _, e := range ctr.Env {
			switch e.Name {
			case "FAKECRI_IGNORE_SIGTERM":
				if e.Value == "true" {
					return 0, false
				}
			case "FAKECRI_STOP_DELAY":
				if d, err := time.ParseDuration(e.Value); err == nil {
					stop = d
				}
			}
		}
		return stop, true
	}
	return 0, false
}

// checkLeaseFresh: while the agent runs and reaches the API, its node lease
// is renewed within the lease duration, whatever the sync loop is doing
// (stalled relists, hung runtime calls).
func (c *Checker) checkLeaseFresh() {
	now := c.h.K.Elapsed()
	if c.h.Agent() == nil {
		c.suite.leaseExcused = max(c.suite.leaseExcused, addSat(now, nodestatus.DefaultLeaseDuration))
		return
	}
	if now <= c.suite.leaseExcused || now < nodestatus.DefaultLeaseDuration {
		return
	}
	l, err := c.h.API.User().GetLease(nodestatus.LeaseNamespace, c.h.NodeName)
	if err != nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		c.fail("lease-fresh", "node lease missing %v after the agent started (%v)", now, err)
		c.suite.leaseExcused = addSat(now, nodestatus.DefaultLeaseDuration)
		return
	}
	limit := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	if age := c.h.K.Now().Sub(l.Spec.RenewTime.Time); age > limit {
		c.fail("lease-fresh", "node lease renewed %v ago, more than its duration %v", age, limit)
		c.suite.leaseExcused = addSat(now, limit) // report once per lapse
	}
}
