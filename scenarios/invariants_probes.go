package scenarios

import (
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// probeSlack bounds what the agent adds to a probe's own timing: a relist
// (1 s), a sync, a status write with retries.
const probeSlack = 5 * time.Second

// The probe kinds the checker follows, indexed like ProbeKind.
var probeKinds = [...]ProbeKind{LivenessProbe, ReadinessProbe, StartupProbe}

// probeChecks is the checker's state for the probe invariants
// (liveness-restarts, startup-protects, fresh-probe-results and the
// readiness part of ready-is-true). It samples the true health of every
// probed endpoint of every running instance from the fake runtime's
// scripts at each check and at each status write.
type probeChecks struct {
	pods     map[types.UID]*corev1.Pod
	insts    map[string]*probedInstance
	restarts int
	agentUp  time.Duration // since when the current agent runs (-1: down)
	reported map[string]bool
	// owed: probe-restarts' obligations (invariants_probekill.go).
	owed []probeRestart
	// atOnce: readiness-at-once's obligations by instance ID
	// (invariants_readiness.go).
	atOnce map[string]*readyAtOnce
}

// probedInstance is what the checker knows of one container instance's
// endpoints. Times are the kernel's elapsed times; -1 means never/none.
type probedInstance struct {
	uid       types.UID
	name      string
	started   time.Duration
	unhealthy [3]time.Duration // since when continuously unhealthy
	healthy   [3]time.Duration // first healthy sample since the instance started
	// startedOK is when a status written by the current agent (which
	// probes startup again) first showed the instance started.
	startedOK time.Duration
	gone      bool
}

func newProbeChecks() *probeChecks {
	return &probeChecks{pods: map[types.UID]*corev1.Pod{}, insts: map[string]*probedInstance{}, reported: map[string]bool{}, agentUp: -1,
		atOnce: map[string]*readyAtOnce{}}
}

func probeOf(c *corev1.Container, k ProbeKind) *corev1.Probe {
	switch k {
	case LivenessProbe:
		return c.LivenessProbe
	case ReadinessProbe:
		return c.ReadinessProbe
	}
	return c.StartupProbe
}

func probeTiming(p *corev1.Probe) (period, timeout, delay time.Duration, failures, successes int) {
	period, timeout = 10*time.Second, time.Second
	if p.PeriodSeconds > 0 {
		period = time.Duration(p.PeriodSeconds) * time.Second
	}
	if p.TimeoutSeconds > 0 {
		timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	failures, successes = 3, 1
	if p.FailureThreshold > 0 {
		failures = int(p.FailureThreshold)
	}
	if p.SuccessThreshold > 0 {
		successes = int(p.SuccessThreshold)
	}
	return period, timeout, time.Duration(p.InitialDelaySeconds) * time.Second, failures, successes
}

func (c *Checker) containerSpec(uid types.UID, name string) *corev1.Container {
	pod := c.probes.pods[uid]
	if pod == nil {
		return nil
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// endpointHealthy says how the probe's endpoint of container id answers
// (answered) at time at, from the fake runtime's script.
func (c *Checker) endpointHealthy(id string, p *corev1.Probe, at time.Time) bool {
	e, ok := c.h.Runtime.EndpointsAt(id, at)
	if !ok {
		return false
	}
	switch h := p.ProbeHandler; {
	case h.Exec != nil:
		return e.ExecHealthy(h.Exec.Command)
	case h.HTTPGet != nil:
		return e.HTTPHealthy(h.HTTPGet.Port.IntValue(), strings.TrimPrefix(h.HTTPGet.Path, "/"))
	case h.TCPSocket != nil:
		return e.TCPHealthy(h.TCPSocket.Port.IntValue())
	case h.GRPC != nil:
		svc := ""
		if h.GRPC.Service != nil {
			svc = *h.GRPC.Service
		}
		return e.GRPCHealthy(int(h.GRPC.Port), svc)
	}
	return false
}

// unhealthyWithin reports whether the endpoint answered unhealthy at some
// instant of [from, to] (looked at every 100 ms, and at to).
func (c *Checker) unhealthyWithin(id string, p *corev1.Probe, from, to time.Duration) bool {
	base := c.h.K.Now().Add(-c.h.K.Elapsed())
	for t := to; t >= from; t -= 100 * time.Millisecond {
		if !c.endpointHealthy(id, p, base.Add(t)) {
			return true
		}
	}
	return false
}

// sample records the health of every probed endpoint of a running
// instance at now.
func (c *Checker) sample(id string, uid types.UID, name string, now time.Duration) *probedInstance {
	spec := c.containerSpec(uid, name)
	if spec == nil {
		return nil
	}
	pi := c.probes.insts[id]
	if pi == nil {
		started := now
		if at, ok := c.h.Runtime.TrueStartedAt(id); ok {
			started = c.elapsedAt(at)
		}
		pi = &probedInstance{uid: uid, name: name, started: started, startedOK: -1,
			unhealthy: [3]time.Duration{-1, -1, -1}, healthy: [3]time.Duration{-1, -1, -1}}
		c.probes.insts[id] = pi
	}
	if pi.gone {
		return pi
	}
	for i, k := range probeKinds {
		p := probeOf(spec, k)
		if p == nil {
			continue
		}
		if c.endpointHealthy(id, p, c.h.K.Now()) {
			pi.unhealthy[i] = -1
			if pi.healthy[i] < 0 {
				pi.healthy[i] = now
			}
		} else {
			if pi.unhealthy[i] < 0 {
				pi.unhealthy[i] = now
			}
		}
	}
	return pi
}

// elapsedAt converts a runtime timestamp (Unix ns) to the kernel's
// elapsed time.
func (c *Checker) elapsedAt(ns int64) time.Duration {
	return time.Unix(0, ns).Sub(c.h.K.Now()) + c.h.K.Elapsed()
}

// checkProbes samples every running instance, checks the liveness
// deadline of those that should have been restarted, and judges every
// instance that stopped.
func (c *Checker) checkProbes(truth []RuntimeContainer) {
	pc, now := c.probes, c.h.K.Elapsed()
	switch {
	case c.h.Agent() == nil:
		pc.agentUp = -1
	case c.h.Restarts() != pc.restarts || pc.agentUp < 0:
		pc.restarts, pc.agentUp = c.h.Restarts(), now
		for _, pi := range pc.insts {
			pi.startedOK = -1
		}
	}
	running := map[string]bool{}
	for _, ct := range truth {
		if ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		running[ct.ID] = true
		if spec := c.containerSpec(ct.PodUID, ct.Name); spec == nil ||
			spec.LivenessProbe == nil && spec.ReadinessProbe == nil && spec.StartupProbe == nil {
			continue // nothing to sample: no probe judges it
		}
		if pi := c.sample(ct.ID, ct.PodUID, ct.Name, now); pi != nil {
			c.checkLivenessDeadline(ct.ID, pi, now)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(pc.insts)) { // in order: the trace must not depend on the map's
		pi := pc.insts[id]
		if !pi.gone && !running[id] {
			pi.gone = true
			c.judgeStop(id, pi)
		}
	}
	c.checkProbeRestarts(truth)
	c.checkReadyAtOnce()
}

// deleting reports whether the pod is being deleted (its kills are not
// the probes').
func (c *Checker) deletingPod(uid types.UID) bool {
	p := c.probes.pods[uid]
	return p == nil || p.DeletionTimestamp != nil || c.lastPhase[uid] == corev1.PodSucceeded || c.lastPhase[uid] == corev1.PodFailed
}

// checkLivenessDeadline: liveness-restarts, upper bound. An instance
// whose liveness endpoint has failed continuously since U, past its
// initial delay and a startup success seen by the current agent, is
// killed by U + (failureThreshold+1)·period + failureThreshold·timeout +
// grace + slack, U counted from the end of any runtime impairment.
func (c *Checker) checkLivenessDeadline(id string, pi *probedInstance, now time.Duration) {
	spec := c.containerSpec(pi.uid, pi.name)
	p := spec.LivenessProbe
	if p == nil || pi.unhealthy[0] < 0 || c.probes.agentUp < 0 || c.deletingPod(pi.uid) || c.probes.reported[id] {
		return
	}
	period, timeout, delay, failures, _ := probeTiming(p)
	// While the runtime is impaired (a hung status call, a not-ready
	// runtime, API faults) the agent may not see the container or stop it:
	// the deadline counts from when it can again.
	if now < c.suite.runtimeImpaired {
		return
	}
	base := max(pi.unhealthy[0], c.probes.agentUp, pi.started+delay, c.suite.runtimeImpaired)
	if sp := spec.StartupProbe; sp != nil {
		if pi.startedOK < 0 {
			return
		}
		speriod, stimeout, _, _, _ := probeTiming(sp)
		base = max(base, pi.startedOK+speriod+stimeout)
	}
	grace := 30 * time.Second
	if g := c.probes.pods[pi.uid].Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	if p.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
	}
	// The kill itself is bounded as a deletion's is (stopBound: the grace,
	// at least the least stop timeout, plus preStop hooks and sidecars),
	// acted on within graceSlack (a relist and the checker's step): the
	// probe's verdict reaches the pod worker at once.
	deadline := base + time.Duration(failures+1)*period + time.Duration(failures)*timeout +
		stopBound(c.probes.pods[pi.uid], int64(grace/time.Second)) + graceSlack
	if now > deadline {
		c.probes.reported[id] = true
		c.fail("liveness-restarts", "container %s/%s (%s) still runs %v after its liveness endpoint started failing (deadline %v)",
			pi.uid, pi.name, id, now-pi.unhealthy[0], deadline-pi.unhealthy[0])
	}
}

// judgeStop: liveness-restarts (never before) and startup-protects. An
// instance of a pod not being deleted stops only by a probe kill (the
// generated containers never exit by themselves): by its startup probe,
// after initialDelay + (failureThreshold-1)·period of running with the
// startup endpoint failing lately; or by its liveness probe, likewise,
// counted from the first moment startup could have succeeded. (Or with
// its sandbox, when that came up without an IP: the agent replaces it, as
// the kubelet does.) A kill before either is possible, when the startup
// endpoint was never healthy, breaks startup-protects; otherwise
// liveness-restarts.
func (c *Checker) judgeStop(id string, pi *probedInstance) {
	spec := c.containerSpec(pi.uid, pi.name)
	if spec == nil || c.deletingPod(pi.uid) || (spec.LivenessProbe == nil && spec.StartupProbe == nil) {
		return
	}
	exit, ok := c.h.Runtime.TrueExit(id)
	if !ok || exit.FinishedAt == 0 || exit.Reason == "OOMKilled" {
		return
	}
	if c.h.Runtime.TrueSandboxLacksIP(id) {
		return // its sandbox got no IP (injected): the agent replaces it, and kills it with it
	}
	killed := c.elapsedAt(exit.FinishedAt)
	// The agent decided to kill when it first asked the runtime to stop
	// the container; a failed or delayed call (runtime not ready, an
	// injected error or hang) carries the verdict of that moment out later.
	if at, ok := c.h.Runtime.TrueStopAskedAt(id); ok {
		killed = min(killed, c.elapsedAt(at))
	}
	// A kill carried out during a runtime stall (a stalled relist, a hung
	// or failing call) or just after may carry a verdict reached any time
	// since it began: the endpoint's failures count from then.
	decided := killed
	if since, ok := c.impairedAround(killed, probeSlack); ok {
		decided = min(decided, since)
	}
	justified := func(k ProbeKind, from time.Duration) bool {
		p := probeOf(spec, k)
		if p == nil || from < 0 {
			return false
		}
		period, timeout, delay, failures, _ := probeTiming(p)
		earliest := max(from, pi.started+delay) + time.Duration(failures-1)*period
		return killed+time.Second >= earliest && c.unhealthyWithin(id, p, decided-period-timeout-time.Second, killed)
	}
	livenessFrom := pi.started
	if spec.StartupProbe != nil {
		livenessFrom = pi.healthy[2]
	}
	if justified(StartupProbe, pi.started) || justified(LivenessProbe, livenessFrom) {
		if _, asked := c.h.Runtime.TrueStopAskedAt(id); asked {
			c.expectProbeRestart(id, pi, killed, c.elapsedAt(exit.FinishedAt))
		}
		return
	}
	inv := "liveness-restarts"
	if spec.StartupProbe != nil && pi.healthy[2] < 0 {
		inv = "startup-protects"
	}
	c.fail(inv, "container %s/%s (%s) stopped %v after it started, before its probes allowed a kill",
		pi.uid, pi.name, id, killed-pi.started)
}

// onWriteProbes: fresh-probe-results and the readiness part of
// ready-is-true, judged on every pod status the agent writes.
func (c *Checker) onWriteProbes(r apiserver.Record) {
	p := r.Pod
	c.probes.pods[p.UID] = p
	now := c.h.K.Elapsed()
	ready := IsReady(p)
	for _, cs := range p.Status.ContainerStatuses {
		spec := c.containerSpec(p.UID, cs.Name)
		if spec == nil || cs.State.Running == nil || !strings.Contains(cs.ContainerID, "://") {
			continue
		}
		id := cs.ContainerID[strings.Index(cs.ContainerID, "://")+3:]
		pi := c.sample(id, p.UID, cs.Name, now)
		if pi == nil || pi.gone {
			continue
		}
		if cs.Started != nil && *cs.Started && pi.startedOK < 0 && c.probes.agentUp >= 0 && r.Actor == apiserver.ActorAgent {
			pi.startedOK = now
			if !cs.Ready {
				c.expectReadyAtOnce(id, pi, spec, now)
			}
		}
		if cs.Ready && r.Actor == apiserver.ActorAgent {
			c.noteReady(id)
		}
		if rp := spec.ReadinessProbe; rp != nil && cs.Ready && pi.healthy[1] < 0 {
			c.fail("fresh-probe-results", "container %s of pod %s/%s (%s) reported ready though its readiness endpoint never answered healthy",
				cs.Name, p.Namespace, p.Name, id)
		}
		if !ready {
			continue
		}
		if rp := spec.ReadinessProbe; rp != nil && pi.unhealthy[1] >= 0 {
			period, timeout, _, failures, _ := probeTiming(rp)
			if now-pi.unhealthy[1] > time.Duration(failures+1)*period+time.Duration(failures)*timeout+probeSlack {
				c.fail("ready-is-true", "pod %s/%s Ready while the readiness endpoint of %s failed for %v", p.Namespace, p.Name, cs.Name, now-pi.unhealthy[1])
			}
		}
		if spec.StartupProbe != nil && pi.healthy[2] < 0 {
			c.fail("ready-is-true", "pod %s/%s Ready while the startup endpoint of %s never answered healthy", p.Namespace, p.Name, cs.Name)
		}
	}
}
