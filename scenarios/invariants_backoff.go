package scenarios

import (
	"cmp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

// The kubelet's crash-loop back-off (v1.37.2: kubelet.go's
// initialCrashLoopBackOff, MaxContainerBackOff and 600 s expiry, with
// client-go's flowcontrol.Backoff), as backoff-respected models it.
const (
	crashBackoffInitial = 10 * time.Second
	crashBackoffMax     = 300 * time.Second
	crashBackoffExpiry  = 10 * time.Minute
	// crashDecisionLag bounds how long before a start the agent decided
	// it (and recorded the restart in its back-off): the image check and
	// CreateContainer in between. Within it of the expiry the model does
	// not know whether the agent's entry had expired.
	crashDecisionLag = 5 * time.Second
	// crashRestartSlack is how late after its back-off a restart may come
	// in a quiet world: a relist (1 s), the worker's requeue and the sync.
	crashRestartSlack = 3 * time.Second
)

// backoffChecks is backoff-respected's model of the kubelet's crash-loop
// back-off: per key (pod UID, container name, image and resources: the
// kubelet's GetBackoffKey), the delay the next held exit waits, bounded
// below and above (where the model cannot tell whether the agent's entry
// expired), and when the restart that set it started. Built from the
// runtime's truth only; it never asks the agent.
type backoffChecks struct {
	// insts: every instance the runtime holds, by ID.
	insts map[string]*backoffInstance
	// judged: the instances whose start was judged.
	judged  map[string]bool
	entries map[string]backoffEntry
	// restarts and agentSince: the agent instance the entries belong to
	// (its back-off lives in memory: a new agent starts with none) and
	// when it was first seen up (-1: down).
	restarts   int
	agentSince time.Duration
	// noisy is the last check at which the world was not quiet (a fault
	// in force or being recovered from, the agent down or just started):
	// the agent may have tried a start that failed and so advanced its
	// back-off without the runtime ever running the instance.
	noisy time.Duration
	// firstExit: when each pod UID/container name first exited (its
	// first restart, failed or not, comes after).
	firstExit map[string]time.Duration
}

// backoffInstance is what the model knows of one container instance.
type backoffInstance struct {
	uid, name, sandbox, key string
	attempt                 uint32
	// started, finished, stopAsked: elapsed times (-1: not (yet) known).
	started, finished, stopAsked time.Duration
}

// backoffEntry is one key's back-off in the model.
type backoffEntry struct {
	lo, hi    time.Duration
	restarted time.Duration
}

func newBackoffChecks() *backoffChecks {
	return &backoffChecks{insts: map[string]*backoffInstance{}, judged: map[string]bool{},
		entries: map[string]backoffEntry{}, agentSince: -1, noisy: -1, firstExit: map[string]time.Duration{}}
}

// checkBackoff is backoff-respected. The kubelet, about to start a
// container that has an exited instance (the newest that had exited when
// it decided: for a container killed for its probe and started in the
// same sync, the one before the killed one), holds it while its back-off
// entry lives and less than the entry's delay has passed since that
// instance's FinishedAt; otherwise it starts it and records the restart:
// a new entry of 10 s, or the live one doubled (≤ 300 s). An entry dies
// 10 min after the restart that set it. A container with no exited
// instance starts at once and leaves its entry alone. So a crash loop
// restarts at once, then after 10 s, 20 s, 40 s, … 300 s.
//
// Every start is checked never to come early; a restart after an exit of
// its own, in the same sandbox, in a quiet world (the same agent up
// throughout, the runtime and its lists sound, no pull to wait for) is
// also checked not to come more than crashRestartSlack late.
func (c *Checker) checkBackoff() {
	if c.bo == nil {
		c.bo = newBackoffChecks()
	}
	b, now := c.bo, c.h.K.Elapsed()
	switch {
	case c.h.Agent() == nil:
		b.agentSince = -1
		clear(b.entries)
	case c.h.Restarts() != b.restarts || b.agentSince < 0:
		b.restarts, b.agentSince = c.h.Restarts(), now
		clear(b.entries)
	}
	if c.h.Agent() == nil || c.suite.sourceFailing ||
		now <= max(c.suite.runtimeImpaired, c.suite.viewStale, c.suite.leaseExcused) {
		b.noisy = now
	}
	c.evaluate("backoff")
	// The model learns only from instances that change in the runtime.
	if !c.changed("backoff", readsRuntime, false) {
		return
	}
	sandboxed := map[string]bool{}
	for _, sb := range c.truth().sandboxes {
		sandboxed[sb.Labels[podstate.LabelPodUID]] = true
	}
	for key := range b.entries {
		if uid, _, _ := strings.Cut(key, "/"); !sandboxed[uid] {
			delete(b.entries, key) // the pod left the node: the agent forgot it
		}
	}
	var fresh []*backoffInstance
	present := map[string]bool{}
	for _, ct := range c.truth().raw {
		in := c.backoffInstance(ct)
		if in == nil {
			continue
		}
		present[ct.Id] = true
		if first, ok := b.firstExit[in.uid+"/"+in.name]; in.finished >= 0 && (!ok || in.finished < first) {
			b.firstExit[in.uid+"/"+in.name] = in.finished
		}
		if in.started >= 0 && !b.judged[ct.Id] {
			b.judged[ct.Id] = true
			fresh = append(fresh, in)
		}
	}
	// The agent sees only the instances the runtime still holds: a removed
	// one (garbage-collected, or its pod gone from the node) is no exit to
	// back off from.
	for id := range b.insts {
		if !present[id] {
			delete(b.insts, id)
		}
	}
	slices.SortFunc(fresh, func(x, y *backoffInstance) int { return cmp.Compare(x.started, y.started) })
	for _, in := range fresh {
		c.judgeStart(in)
	}
}

// backoffInstance records (or refreshes) what the model knows of ct.
func (c *Checker) backoffInstance(ct *runtimeapi.Container) *backoffInstance {
	b := c.bo
	in := b.insts[ct.Id]
	if in == nil {
		ref, err := podstate.PodRefFromLabels(ct.Labels)
		if err != nil {
			return nil
		}
		in = &backoffInstance{uid: string(ref.UID), name: ct.Metadata.GetName(), sandbox: ct.PodSandboxId,
			attempt: ct.Metadata.GetAttempt(), started: -1, finished: -1, stopAsked: -1}
		in.key = in.uid + "/" + in.name
		if cfg, ok := c.h.Runtime.TrueContainerConfigView(ct.Id); ok {
			in.key += "/" + cmp.Or(cfg.GetImage().GetUserSpecifiedImage(), cfg.GetImage().GetImage()) + "/" + cfg.GetLinux().GetResources().String()
		}
		b.insts[ct.Id] = in
	}
	if in.started < 0 {
		if at, ok := c.h.Runtime.TrueStartedAt(ct.Id); ok {
			in.started = c.elapsedAt(at)
		}
	}
	if in.finished < 0 {
		if exit, ok := c.h.Runtime.TrueExit(ct.Id); ok && exit.FinishedAt != 0 {
			in.finished = c.elapsedAt(exit.FinishedAt)
		}
	}
	if in.stopAsked < 0 {
		if at, ok := c.h.Runtime.TrueStopAskedAt(ct.Id); ok {
			in.stopAsked = c.elapsedAt(at)
		}
	}
	return in
}

// judgeStart checks the start of instance n against the model and
// records it.
func (c *Checker) judgeStart(n *backoffInstance) {
	b := c.bo
	// The instance before n, and when the agent decided to start n: when
	// it asked that one to stop, if it did while it ran (a probe or spec
	// kill, started again in the same sync), else at n's start.
	var prev *backoffInstance
	for _, in := range b.insts {
		if in.uid == n.uid && in.name == n.name && in.attempt < n.attempt && (prev == nil || in.attempt > prev.attempt) {
			prev = in
		}
	}
	decided, killed := n.started, false
	if prev != nil && prev.stopAsked >= 0 && prev.stopAsked <= n.started && (prev.finished < 0 || prev.stopAsked <= prev.finished) {
		decided, killed = prev.stopAsked, true
	}
	var exited *backoffInstance
	for _, in := range b.insts {
		if killed && in == prev {
			continue // it ran when the agent decided
		}
		if in.uid == n.uid && in.name == n.name && in.attempt < n.attempt && in.finished >= 0 && in.finished <= decided &&
			(exited == nil || in.attempt > exited.attempt) {
			exited = in
		}
	}
	if exited == nil {
		return // a first start, or no exit to back off from: the entry stays
	}
	e, ok := b.entries[n.key]
	age := max(exited.finished, decided) - e.restarted
	// The agent measured from its own decision and restart times, each
	// up to crashDecisionLag before the model's.
	live := ok && age+crashDecisionLag <= crashBackoffExpiry
	uncertain := ok && !live && age-crashDecisionLag <= crashBackoffExpiry
	lo, hi := time.Duration(0), time.Duration(0)
	switch {
	case live:
		lo, hi = e.lo, e.hi
	case uncertain:
		hi = e.hi
	}
	waited := n.started - exited.finished
	if waited < lo {
		c.fail("backoff-respected", "container %s/%s (attempt %d) restarted %v after attempt %d exited, inside its %v crash-loop back-off",
			n.uid, n.name, n.attempt, waited, exited.attempt, lo)
	} else if waited > hi+crashRestartSlack && c.quietRestart(n, prev, exited) {
		c.fail("backoff-respected", "container %s/%s (attempt %d) restarted %v after attempt %d exited, %v after its %v crash-loop back-off ended",
			n.uid, n.name, n.attempt, waited, exited.attempt, waited-hi, hi)
	}
	next := backoffEntry{lo: crashBackoffInitial, hi: crashBackoffInitial, restarted: n.started}
	switch {
	case live:
		next.lo, next.hi = min(2*e.lo, crashBackoffMax), min(2*e.hi, crashBackoffMax)
	case uncertain:
		next.hi = min(2*e.hi, crashBackoffMax)
	}
	b.entries[n.key] = next
}

// quietRestart reports whether nothing but the back-off could have
// delayed n after exited, or advanced the agent's back-off unseen:
// exited is the instance just before n, it exited of itself, in n's
// sandbox; the world has been quiet (the same agent up, the runtime, its
// lists and the API sound) since the container first exited, and no
// runtime fault was injected in the run at all; no start
// of the pod failed (a Failed event: a failed attempt advances the
// back-off too); and no image of it was pulled (Pulling: a pull takes its
// time).
func (c *Checker) quietRestart(n, prev, exited *backoffInstance) bool {
	b := c.bo
	if prev != exited || exited.stopAsked >= 0 || exited.sandbox != n.sandbox {
		return false
	}
	if first, ok := b.firstExit[n.uid+"/"+n.name]; !ok || b.noisy >= first || b.agentSince > first {
		return false
	}
	// An injected runtime fault may bite long after it was injected (a
	// latency on the next calls of a method): any one makes the run
	// noisy for good.
	if len(c.suite.impairments) > 0 || c.suite.runtimeImpaired > 0 || c.suite.viewStale > 0 {
		return false
	}
	for _, e := range c.h.API.User().Events() {
		if string(e.Object.UID) == n.uid && (e.Reason == "Failed" || e.Reason == "Pulling") {
			return false
		}
	}
	spec := c.suite.specs[types.UID(n.uid)]
	if spec == nil {
		return false
	}
	for _, ct := range slices.Concat(spec.InitContainers, spec.Containers) {
		if ct.Name == n.name {
			return ct.ImagePullPolicy != corev1.PullAlways
		}
	}
	return false
}
