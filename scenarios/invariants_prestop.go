package scenarios

import (
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// turnSlack is how much later than the grace period's end, counted from
// when the pod's kill began, a container may still be asked to stop
// (sidecars-stop-together): the kubelet counts what is left of the grace
// after a preStop hook in whole seconds (a hook that took 2.5 s of 4
// leaves 2), so a sidecar's turn may end up to a second past the grace;
// plus the checker's step.
const turnSlack = time.Second + 100*time.Millisecond

// agentChangeSlack is how long after a change of the agent (a crash, a
// restart) the checker may first see it: its step while settling.
const agentChangeSlack = time.Second

// preStopChecks is what prestop-abandoned-runs-on and
// sidecars-stop-together remember.
type preStopChecks struct {
	// cutJudged: exec records already judged, by container ID and index.
	cutJudged map[string]int
	// agentChanges: when the checker saw the agent go down or a new one
	// start; restarts and down: what it saw last.
	agentChanges []time.Duration
	restarts     int
	down         bool
	// requests: when users asked for each deleted pod's deletion, and
	// with what grace.
	requests map[types.UID][]deleteRequest
	// kills: sidecars-stop-together's verdicts per deleted pod.
	kills map[types.UID]*podKill
}

// podKill is the kill of one deleted pod with sidecars: when it began (the
// first preStop exec or stop request among the instances that ran when
// the pod was deleted), and the sidecar instances already judged.
type podKill struct {
	began         time.Duration
	known         bool
	excused, done bool
	judged        map[string]bool
}

// deleteRequest is one user's request to delete a pod.
type deleteRequest struct {
	at    time.Duration
	grace int64
}

func newPreStopChecks() *preStopChecks {
	return &preStopChecks{cutJudged: map[string]int{}, requests: map[types.UID][]deleteRequest{}, kills: map[types.UID]*podKill{}}
}

// onWritePreStop records when users ask to delete a pod.
func (c *Checker) onWritePreStop(r apiserver.Record) {
	if r.Actor == apiserver.ActorUser && (r.Verb == apiserver.VerbGracefulDelete || r.Verb == apiserver.VerbDelete) {
		grace := int64(0)
		if g := r.Pod.DeletionGracePeriodSeconds; g != nil {
			grace = *g
		}
		c.prestop.requests[r.UID] = append(c.prestop.requests[r.UID], deleteRequest{c.h.K.Elapsed(), grace})
	}
}

// sidecarKillsPending reports whether a deleted pod with sidecars may
// still have a sidecar instance to judge (sidecars-stop-together runs at
// every check then: its bound moves with time).
func (c *Checker) sidecarKillsPending() bool {
	for uid, d := range c.term.deletions {
		if k := c.prestop.kills[uid]; k != nil && (k.excused || k.done) {
			continue
		}
		if spec := c.suite.specs[uid]; spec != nil && d.grace > 0 && hasSidecar(spec) {
			return true
		}
	}
	return false
}

// notePreStopAgent records a change of the agent seen now.
func (c *Checker) notePreStopAgent() {
	pc := c.prestop
	down := c.h.Agent() == nil
	if n := c.h.Restarts(); n != pc.restarts || down != pc.down {
		pc.restarts, pc.down = n, down
		pc.agentChanges = append(pc.agentChanges, c.h.K.Elapsed())
	}
}

// agentChangedWithin reports whether the checker saw the agent change in
// [from, to+agentChangeSlack].
func (c *Checker) agentChangedWithin(from, to time.Duration) bool {
	for _, t := range c.prestop.agentChanges {
		if t >= from && t <= to+agentChangeSlack {
			return true
		}
	}
	return false
}

// deletionAskedWithin reports whether a user asked to delete pod uid
// (again) in (from, to].
func (c *Checker) deletionAskedWithin(uid types.UID, from, to time.Duration) bool {
	for _, q := range c.prestop.requests[uid] {
		if q.at > from && q.at <= to {
			return true
		}
	}
	return false
}

// checkPreStopAbandoned is prestop-abandoned-runs-on: a preStop exec hook
// that outlives its wait is abandoned, never stopped, as the kubelet
// leaves it (it waits for the hook at most the grace period, then stops
// the container; the hook's exec is not cancelled): no exec of a
// container's preStop command is cut by its caller while the container
// still runs. Excused: the agent changed (a crash ends its calls), a user
// asked to delete the pod again (a shorter grace calls the kill off, as
// upstream's pod worker cancels it), or the runtime or API was impaired
// since the hook began.
func (c *Checker) checkPreStopAbandoned(containers []RuntimeContainer) {
	pc := c.prestop
	for _, ct := range containers {
		spec := c.preStopSpec(ct.PodUID, ct.Name)
		if spec == nil {
			continue
		}
		cmd := strings.Join(spec.Exec.Command, " ")
		execs := c.h.Runtime.TrueExecs(ct.ID)
		for i := pc.cutJudged[ct.ID]; i < len(execs); i++ {
			e := execs[i]
			if e.Ended == 0 {
				break // judged once it ends
			}
			pc.cutJudged[ct.ID] = i + 1
			if e.Cmd != cmd || !e.Cut || !e.ContainerRan {
				continue
			}
			at, ended := c.elapsedAt(e.At), c.elapsedAt(e.Ended)
			if c.agentChangedWithin(at, ended) || c.deletionAskedWithin(ct.PodUID, at, ended) || c.suite.runtimeImpaired >= at {
				continue
			}
			c.fail("prestop-abandoned-runs-on", "the preStop hook %q of container %s (%s) of pod %s was cut %v after it began while the container still ran: an abandoned hook runs on until the container's stop",
				cmd, ct.Name, ct.ID, ct.PodUID, ended-at)
		}
	}
}

// preStopSpec is the exec preStop hook of container name of pod uid (a
// regular container or a sidecar), or nil.
func (c *Checker) preStopSpec(uid types.UID, name string) *corev1.LifecycleHandler {
	spec := c.suite.specs[uid]
	if spec == nil {
		return nil
	}
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			if list[i].Name == name && list[i].Lifecycle != nil && list[i].Lifecycle.PreStop != nil && list[i].Lifecycle.PreStop.Exec != nil {
				return list[i].Lifecycle.PreStop
			}
		}
	}
	return nil
}

// checkSidecarsStopTogether is sidecars-stop-together, upstream's
// termination ordering (kuberuntime_termination_order.go, killContainer):
// every container of a deleted pod is killed at once; a container runs
// its preStop hook for at most the grace period G, then, if grace is
// left, a sidecar waits for its turn (every regular container and every
// later sidecar stopped) for at most what is left, then is asked to stop.
// So, from when the kill began (K):
//   - bounds: a sidecar instance still running at K+G is asked to stop by
//     K+G+turnSlack: once the grace is used up no sidecar waits for
//     another, and they are stopped together;
//   - order: a sidecar instance asked to stop before K+G is asked only
//     after every regular container and every later sidecar that ran at K
//     has exited.
//
// Judged for pods a user deleted with a grace period, the kill the
// deletion's (no instance of the pod asked to stop or hooked before it);
// excused when the agent changed, the pod was deleted again, or the
// runtime or API was impaired since the deletion.
func (c *Checker) checkSidecarsStopTogether() {
	now := c.h.K.Elapsed()
	for _, uid := range slices.Sorted(maps.Keys(c.term.deletions)) { // in order: the trace must not depend on the map's
		d := c.term.deletions[uid]
		spec := c.suite.specs[uid]
		if spec == nil || d.grace <= 0 || !hasSidecar(spec) {
			continue
		}
		k := c.prestop.kills[uid]
		if k == nil {
			k = &podKill{judged: map[string]bool{}}
			c.prestop.kills[uid] = k
		}
		if k.excused || k.done {
			continue
		}
		insts := c.instancesAt(uid, d)
		if !k.known {
			began, ok := c.killBegan(insts, d.at)
			if !ok {
				continue
			}
			if began < d.at {
				k.excused = true // a termination already under way
				continue
			}
			k.began, k.known = began, true
		}
		grace := c.graceAt(uid, k.began)
		end := k.began + time.Duration(grace)*time.Second
		if grace <= 0 || c.agentChangedWithin(d.at, max(now, end+turnSlack)) || c.deletionAskedWithin(uid, k.began, end+turnSlack) || c.suite.runtimeImpaired >= d.at {
			k.excused = true
			continue
		}
		c.judgeSidecarStops(d, k, grace, insts, end, now)
		k.done = true
		for _, ki := range insts {
			k.done = k.done && (!ki.sidecar || k.judged[ki.id])
		}
	}
}

// killedInstance is one container instance of a deleted pod as
// sidecars-stop-together reads it (times since the start; -1: never).
type killedInstance struct {
	id, name         string
	started, asked   time.Duration
	finished, hook   time.Duration
	sidecar, regular bool
	sidecarPosition  int
}

// instancesAt lists the instances of deleted pod uid that ran when it was
// deleted, with their times from the runtime.
func (c *Checker) instancesAt(uid types.UID, d *deletion) []killedInstance {
	spec := c.suite.specs[uid]
	var out []killedInstance
	for _, id := range slices.Sorted(maps.Keys(d.known)) {
		started, ok := c.h.Runtime.TrueStartedAt(id)
		if !ok || c.elapsedAt(started) > d.at {
			continue
		}
		ki := killedInstance{id: id, started: c.elapsedAt(started), asked: -1, finished: -1, hook: -1, sidecarPosition: -1}
		if exit, ok := c.h.Runtime.TrueExit(id); ok && exit.FinishedAt != 0 {
			ki.finished = c.elapsedAt(exit.FinishedAt)
			if ki.finished <= d.at {
				continue
			}
		}
		if at, ok := c.h.Runtime.TrueStopAskedAt(id); ok {
			ki.asked = c.elapsedAt(at)
		}
		name, ok := c.instanceName(uid, id)
		if !ok {
			continue
		}
		ki.name, ki.regular = name, isRegular(spec, name)
		for i := range spec.InitContainers {
			if spec.InitContainers[i].Name == name && refmodel.IsSidecar(&spec.InitContainers[i]) {
				ki.sidecar, ki.sidecarPosition = true, i
			}
		}
		if h := c.preStopSpec(uid, name); h != nil {
			cmd := strings.Join(h.Exec.Command, " ")
			for _, e := range c.h.Runtime.TrueExecs(id) {
				if e.Cmd == cmd {
					ki.hook = c.elapsedAt(e.At)
					break
				}
			}
		}
		out = append(out, ki)
	}
	return out
}

// instanceName is the container name of instance id of pod uid, from the
// checker's truth snapshot.
func (c *Checker) instanceName(uid types.UID, id string) (string, bool) {
	for _, ct := range c.truth().byPod[uid] {
		if ct.ID == id {
			return ct.Name, true
		}
	}
	return "", false
}

// killBegan is when the kill of a deleted pod began: the earliest preStop
// exec or stop request among its instances that ran at the deletion (or
// before it: a termination already under way).
func (c *Checker) killBegan(insts []killedInstance, deleted time.Duration) (time.Duration, bool) {
	began, ok := time.Duration(0), false
	for _, ki := range insts {
		for _, t := range []time.Duration{ki.hook, ki.asked} {
			if t >= 0 && (!ok || t < began) {
				began, ok = t, true
			}
		}
	}
	return began, ok
}

// judgeSidecarStops judges each sidecar instance of a deleted pod once
// its stop request is seen, or once its bound passed without one.
func (c *Checker) judgeSidecarStops(d *deletion, k *podKill, grace int64, insts []killedInstance, end, now time.Duration) {
	for _, ki := range insts {
		if !ki.sidecar || k.judged[ki.id] {
			continue
		}
		ranAtEnd := ki.finished < 0 || ki.finished > end
		switch {
		case ki.asked < 0 && ranAtEnd && now > end+turnSlack:
			k.judged[ki.id] = true
			c.fail("sidecars-stop-together", "sidecar %s (%s) of pod %s still ran %v after the grace period of %ds was used up (the kill began at +%v) and was not asked to stop: with no grace left a sidecar does not wait for its turn",
				ki.name, ki.id, d.name, now-end, grace, k.began)
		case ki.asked < 0 && !ranAtEnd:
			k.judged[ki.id] = true // it exited by itself before the grace's end
		case ki.asked < 0:
			continue
		case ki.asked > end+turnSlack && ranAtEnd:
			k.judged[ki.id] = true
			c.fail("sidecars-stop-together", "sidecar %s (%s) of pod %s was asked to stop %v after the grace period of %ds was used up (the kill began at +%v): with no grace left a sidecar does not wait for its turn",
				ki.name, ki.id, d.name, ki.asked-end, grace, k.began)
		case ki.asked < end-100*time.Millisecond:
			k.judged[ki.id] = true
			for _, o := range insts {
				if o.id == ki.id || !o.regular && (!o.sidecar || o.sidecarPosition < ki.sidecarPosition) {
					continue // it waits for the regular containers and the later sidecars only
				}
				if o.finished < 0 || o.finished > ki.asked {
					c.fail("sidecars-stop-together", "sidecar %s (%s) of pod %s was asked to stop at +%v, %v before the grace period's end, while %s (%s), which it stops after, still ran",
						ki.name, ki.id, d.name, ki.asked, end-ki.asked, o.name, o.id)
					break
				}
			}
		default:
			k.judged[ki.id] = true
		}
	}
}

// graceAt is the grace period of pod uid's kill that began at t: the
// shortest a user asked for by then (-1: none asked).
func (c *Checker) graceAt(uid types.UID, t time.Duration) int64 {
	grace := int64(-1)
	for _, q := range c.prestop.requests[uid] {
		if q.at <= t && (grace < 0 || q.grace < grace) {
			grace = q.grace
		}
	}
	return grace
}

// hasSidecar reports whether spec has a sidecar.
func hasSidecar(spec *corev1.PodSpec) bool {
	for i := range spec.InitContainers {
		if refmodel.IsSidecar(&spec.InitContainers[i]) {
			return true
		}
	}
	return false
}
