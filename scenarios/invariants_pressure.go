package scenarios

import (
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/eviction"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// Slack of the pressure invariants: how long a usage must be steady for
// the agent to have sampled it (the eviction manager samples once a cycle,
// every 10 s, and ranks by that sample: a usage one cycle and 2 s of
// scheduling old is in it; it was 25 s, which left most evictions
// unchecked), and how long an admission excess may last
// (an evicted pod's Failed status may land a moment after a new pod is
// admitted in its place).
const (
	stableFor       = 12 * time.Second
	pressureSetIn   = 40 * time.Second
	transitionSlack = 15 * time.Second
	admissionSlack  = 5 * time.Second
	unusedImageFor  = 20 * time.Second
	evictionPeriod  = 10 * time.Second
)

// pressureChecks is what the eviction and admission invariants remember.
type pressureChecks struct {
	// pods are the newest API pods by UID (every write).
	pods map[types.UID]*corev1.Pod
	// evicted: the container IDs each evicted pod had when its eviction
	// was seen.
	evicted map[types.UID]map[string]bool
	// lastEviction and its agent (restart count); -1: none yet.
	lastEviction   time.Duration
	lastEvictionBy int
	// fired: how many times the memory threshold notifier has fired, as
	// last seen; firedAt: when that count was first seen (-1: never).
	fired   int
	firedAt time.Duration
	// runningSince: when each container ID was first seen running.
	runningSince map[string]time.Duration
	// met: since when each pressure condition's signal has been over a
	// threshold (absent: not over); longMet the end of the latest run of
	// at least a sampling period, and the agent it was seen under.
	met     map[corev1.NodeConditionType]time.Duration
	longMet map[corev1.NodeConditionType]time.Duration
	// tickLate: when an eviction cycle last ran a period late (the
	// eviction-tick-late fault point; 0: never).
	tickLate time.Duration
	longBy   map[corev1.NodeConditionType]int
	apiConds map[corev1.NodeConditionType]bool
	trueFrom map[corev1.NodeConditionType]time.Duration
	trueBy   map[corev1.NodeConditionType]int
	// agentSince: when the current agent started; agentN its number.
	agentSince time.Duration
	agentN     int
	// overSince: since when admission has been exceeded (-1: it is not).
	overSince time.Duration
	// imageUsed: when each image was last used by a container.
	imageUsed map[string]time.Duration
	reported  map[string]bool
}

func newPressureChecks() *pressureChecks {
	return &pressureChecks{pods: map[types.UID]*corev1.Pod{}, evicted: map[types.UID]map[string]bool{}, lastEviction: -1, firedAt: -1,
		runningSince: map[string]time.Duration{}, met: map[corev1.NodeConditionType]time.Duration{},
		longMet: map[corev1.NodeConditionType]time.Duration{}, longBy: map[corev1.NodeConditionType]int{},
		apiConds: map[corev1.NodeConditionType]bool{}, trueFrom: map[corev1.NodeConditionType]time.Duration{},
		trueBy: map[corev1.NodeConditionType]int{}, overSince: -1, imageUsed: map[string]time.Duration{}, reported: map[string]bool{}}
}

// pressureConds are the conditions the eviction manager sets.
var pressureConds = []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}

// impairedWithin reports whether a fault excuse (runtime or API impaired,
// the agent restarted) touches the last d.
func (c *Checker) impairedWithin(d time.Duration) bool {
	now := c.h.K.Elapsed()
	return c.suite.runtimeImpaired >= now-d || c.suite.leaseExcused >= now-d || c.pressure.agentSince >= now-d || c.h.Agent() == nil
}

// onWritePressure follows pod and node writes: evictions (critical-survives,
// one-eviction-per-cycle, eviction-order, reclaim-first) and pressure
// condition flips (pressure-conditions).
func (c *Checker) onWritePressure(r apiserver.Record) {
	p := c.pressure
	switch {
	case r.Kind == apiserver.KindNode && r.Node != nil:
		c.onNodeConditions(r.Node)
	case r.Kind == apiserver.KindPod && r.Pod != nil:
		if r.Verb == apiserver.VerbDelete {
			delete(p.pods, r.UID)
			return
		}
		prev := p.pods[r.UID]
		p.pods[r.UID] = r.Pod
		if isEviction(r.Pod) && (prev == nil || !isEviction(prev)) && p.evicted[r.UID] == nil {
			c.onEviction(r.Pod)
		}
		if isLocalStorageEviction(r.Pod) && (prev == nil || !isLocalStorageEviction(prev)) && p.evicted[r.UID] == nil {
			c.onLocalStorageEviction(r.Pod)
		}
	}
}

// followMemoryThreshold notes when the memory threshold notifier last
// fired (seen at the latest check or eviction).
func (c *Checker) followMemoryThreshold() {
	p := c.pressure
	if n := c.h.MemoryThresholdFired(); n != p.fired {
		p.fired, p.firedAt = n, c.h.K.Elapsed()
	}
}

// isEviction reports whether the pod's status says the eviction manager
// evicted it (not a refusal under pressure, which shares the reason).
func isEviction(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && p.Status.Reason == eviction.Reason &&
		strings.HasPrefix(p.Status.Message, "The node was low on resource")
}

func (c *Checker) onEviction(pod *corev1.Pod) {
	p := c.pressure
	now := c.h.K.Elapsed()
	ids := map[string]bool{}
	for _, ct := range c.truth().byPod[pod.UID] {
		if ct.PodUID == pod.UID {
			ids[ct.ID] = true
		}
	}
	// The evicted phase is shown once the containers stopped: they may be
	// gone from the runtime's list by now, not from its memory.
	for _, e := range c.h.Runtime.TrueExitedAt(c.h.K.Now().UnixNano()) {
		if types.UID(e.Labels[podstate.LabelPodUID]) == pod.UID {
			ids[e.ID] = true
		}
	}
	p.evicted[pod.UID] = ids
	if refmodel.IsCritical(pod) {
		c.fail("critical-survives", "critical pod %s/%s (priority %d) was evicted: %s", pod.Namespace, pod.Name, refmodel.Priority(pod), pod.Status.Message)
	}
	// The memory threshold notifier runs a cycle at once, beside the
	// periodic ones (as the kubelet's runs synchronize from its handler):
	// when it fired since (about) the previous eviction, that eviction or
	// this one may be its cycle's.
	c.followMemoryThreshold()
	notified := p.firedAt >= 0 && p.firedAt >= p.lastEviction-time.Second
	if p.lastEviction >= 0 && p.lastEvictionBy == c.h.Restarts() && now-p.lastEviction < evictionPeriod-time.Second &&
		!notified && !c.impairedWithin(evictionPeriod) {
		c.fail("one-eviction-per-cycle", "pod %s/%s evicted %v after the previous eviction (cycle %v)", pod.Namespace, pod.Name, now-p.lastEviction, evictionPeriod)
	}
	p.lastEviction, p.lastEvictionBy = now, c.h.Restarts()
	signal := evictionSignal(pod.Status.Message)
	if signal == "" {
		return
	}
	if signal == refmodel.SignalNodeFsAvailable {
		c.checkReclaimFirst(pod)
	}
	c.checkEvictionOrder(pod, signal)
}

// evictionSignal is the signal an eviction message names the resource of
// (nodefs for disk).
func evictionSignal(msg string) refmodel.Signal {
	switch {
	case strings.HasPrefix(msg, "The node was low on resource: memory."):
		return refmodel.SignalMemoryAvailable
	case strings.HasPrefix(msg, "The node was low on resource: pids."):
		return refmodel.SignalPIDAvailable
	case strings.HasPrefix(msg, "The node was low on resource: ephemeral-storage."):
		return refmodel.SignalNodeFsAvailable
	}
	return ""
}

// checkEvictionOrder: no steady pod ranks strictly before the evicted one
// by the reference model's ranking (refmodel.Rank) over the runtime's
// true usage. Only pods whose
// usage has been steady long enough for the agent to have sampled it take
// part (a pod without stats rightly ranks first).
func (c *Checker) checkEvictionOrder(pod *corev1.Pod, signal refmodel.Signal) {
	if c.impairedWithin(stableFor) {
		return
	}
	// The ranking is judged at the decision: when the agent first asked the
	// runtime to stop one of the pod's containers (the kubelet shows the
	// evicted phase only once they have stopped, so by this write they
	// no longer run).
	at := c.h.K.Elapsed()
	for id := range c.pressure.evicted[pod.UID] {
		if ns, ok := c.h.Runtime.TrueStopAskedAt(id); ok {
			at = min(at, c.elapsedAt(ns))
		}
	}
	usage := c.steadyUsages(at)
	self, ok := usage[pod.UID]
	if !ok {
		return
	}
	cands := []refmodel.Candidate{{Pod: pod, Usage: self, HasStats: true}}
	for _, uid := range slices.Sorted(maps.Keys(usage)) {
		q := c.pressure.pods[uid]
		if uid == pod.UID || q == nil || refmodel.IsCritical(q) || q.DeletionTimestamp != nil || refmodel.IsTerminal(q.Status.Phase) {
			continue
		}
		cands = append(cands, refmodel.Candidate{Pod: q, Usage: usage[uid], HasStats: true})
	}
	refmodel.Rank(signal, cands)
	if first := cands[0].Pod; first.UID != pod.UID {
		c.fail("eviction-order", "pod %s (priority %d) evicted for %s (usage %+v) but %s (priority %d) ranks before it (usage %+v)",
			pod.Name, refmodel.Priority(pod), signal, self, first.Name, refmodel.Priority(first), cands[0].Usage)
	}
}

// steadyUsages are the true usages of the pods whose every container had
// run for stableFor at instant at (and still ran then) with a constant
// script (no memory growth, no init containers).
func (c *Checker) steadyUsages(at time.Duration) map[types.UID]refmodel.Usage {
	running := map[types.UID]map[string]bool{}
	for _, ct := range c.truth().containers {
		since, seen := c.pressure.runningSince[ct.ID]
		if !seen || at-since < stableFor || !c.ranAt(ct, at) {
			continue
		}
		if running[ct.PodUID] == nil {
			running[ct.PodUID] = map[string]bool{}
		}
		running[ct.PodUID][ct.Name] = true
	}
	out := map[types.UID]refmodel.Usage{}
	for uid, names := range running {
		pod := c.pressure.pods[uid]
		if pod == nil || len(pod.Spec.InitContainers) > 0 || len(names) != len(pod.Spec.Containers) {
			continue
		}
		var u refmodel.Usage
		steady := true
		for _, ctr := range pod.Spec.Containers {
			env := map[string]string{}
			for _, e := range ctr.Env {
				env[e.Name] = e.Value
			}
			if _, grows := env["FAKECRI_MEMORY_GROWTH"]; grows {
				steady = false
			}
			mem, disk := quantityOr(env["FAKECRI_MEMORY"]), quantityOr(env["FAKECRI_DISK"])
			pids := int64(1)
			if v, ok := env["FAKECRI_PIDS"]; ok {
				pids = quantityOr(v)
			}
			u.Memory += mem
			u.Disk += disk
			u.Inodes++
			u.Processes += pids
		}
		if steady {
			out[uid] = u
		}
	}
	return out
}

// ranAt reports whether container ct still ran at instant at: it runs
// now, or it exited at or after at (a pod evicted with no grace stops in
// the instant it was asked to).
func (c *Checker) ranAt(ct RuntimeContainer, at time.Duration) bool {
	if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
		return true
	}
	exit, ok := c.h.Runtime.TrueExit(ct.ID)
	return ok && exit.FinishedAt != 0 && c.elapsedAt(exit.FinishedAt) >= at
}

func quantityOr(s string) int64 {
	if s == "" {
		return 0
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0
	}
	return q.Value()
}

// checkReclaimFirst: no pod is evicted for disk while an image no
// container has used for a while (not pinned) is still present: node-level
// reclaim comes first.
func (c *Checker) checkReclaimFirst(pod *corev1.Pod) {
	// Up to the moment of the eviction (a container may have been
	// created since the last step's look).
	c.trackImages()
	now := c.h.K.Elapsed()
	gc := c.h.AgentConfig().ImageGC
	minAge := gc.EffectivePolicy().MinAge
	for _, img := range c.h.Runtime.TrueImagesView() {
		if img.GetPinned() {
			continue
		}
		if seen, ok := c.imagegc.firstSeen[img.GetId()]; minAge > 0 && (!ok || now-seen < minAge+gc.EffectivePeriod()+c.imagegc.lateRounds(seen, now, gc.EffectivePeriod())+unusedImageFor) {
			// Younger than the collector's minimum age (counted from its
			// first detection, up to a period after the image came, a
			// period more for each round that ran late meanwhile).
			continue
		}
		if last, ok := c.pressure.imageUsed[img.GetId()]; !ok || now-last >= unusedImageFor {
			c.fail("reclaim-first", "pod %s/%s evicted for disk while image %v (%d bytes) was unused", pod.Namespace, pod.Name, img.GetRepoTags(), img.GetSize())
		}
	}
}

// onNodeConditions: a pressure condition clears only after the transition
// period since its signal was last over a threshold (as far as the agent
// could have seen it, and unless an agent restart forgot it).
func (c *Checker) onNodeConditions(n *corev1.Node) {
	p := c.pressure
	now := c.h.K.Elapsed()
	period := c.h.AgentConfig().Eviction.PressureTransitionPeriod
	if period <= 0 {
		period = eviction.DefaultPressureTransitionPeriod // the agent's configured default: a setting, not a rule
	}
	for _, t := range pressureConds {
		on := false
		for _, cond := range n.Status.Conditions {
			if cond.Type == t {
				on = cond.Status == corev1.ConditionTrue
			}
		}
		was := p.apiConds[t]
		p.apiConds[t] = on
		switch {
		case on && !was:
			p.trueFrom[t], p.trueBy[t] = now, c.h.Restarts()
		case !on && was:
			if p.trueBy[t] == c.h.Restarts() && now-p.trueFrom[t] < period-transitionSlack {
				c.fail("pressure-conditions", "%s cleared %v after it was set (transition period %v)", t, now-p.trueFrom[t], period)
			}
			// The agent sees a signal once a cycle: its last sample over the
			// threshold may be up to transitionSlack before the run's end, a
			// period more when a cycle ran late around then.
			slack := transitionSlack
			if end, ok := p.longMet[t]; ok && p.tickLate > 0 && p.tickLate >= end-evictionPeriod-2*time.Second {
				slack += evictionPeriod
			}
			if end, ok := p.longMet[t]; ok && p.longBy[t] == c.h.Restarts() && now < end+period-slack {
				c.fail("pressure-conditions", "%s cleared %v after its signal was last over a threshold (transition period %v)", t, now-end, period)
			}
		}
	}
}

// checkPressure runs the per-step checks: evicted-stays-dead, the
// pressure conditions' signals, admission and image use.
func (c *Checker) checkPressure(truth []RuntimeContainer) {
	p := c.pressure
	now := c.h.K.Elapsed()
	c.followMemoryThreshold()
	if c.h.Restarts() != p.agentN {
		p.agentN, p.agentSince = c.h.Restarts(), now
	}
	if c.due("evicted", readsRuntime|readsAPI, false) {
		for _, ct := range truth {
			if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				if _, ok := p.runningSince[ct.ID]; !ok {
					p.runningSince[ct.ID] = now
				}
			}
			if ids := p.evicted[ct.PodUID]; ids != nil && !ids[ct.ID] && !p.reported[ct.ID] {
				p.reported[ct.ID] = true
				c.fail("evicted-stays-dead", "evicted pod %s got a new container %s (%s)", ct.PodUID, ct.Name, ct.ID)
			}
		}
	}
	c.evaluate("pressure") // the signals move with time
	c.trackImages()
	c.checkSignals()
	// Admission is judged again when the pods, the runtime or the
	// allocations changed, and at every check while it is exceeded.
	if c.due("admission", readsRuntime|readsAPI, p.overSince >= 0, durOf(c.allocationsGen())) {
		c.checkAdmission(truth)
	}
}

// trackImages records when each image was last used by a container.
func (c *Checker) trackImages() {
	now := c.h.K.Elapsed()
	used := c.truth().imagesUsed()
	for _, img := range c.h.Runtime.TrueImagesView() {
		if used[img.GetId()] || slices.ContainsFunc(img.GetRepoTags(), func(t string) bool { return used[t] }) {
			c.pressure.imageUsed[img.GetId()] = now
		}
	}
}

// checkSignals follows the true signals against the agent's thresholds:
// a condition must be set once its signal has been over a threshold for
// pressureSetIn (while the agent runs and reaches the API).
func (c *Checker) checkSignals() {
	p := c.pressure
	now := c.h.K.Elapsed()
	cfg := c.h.AgentConfig()
	u := c.h.Runtime.NodeUsage()
	ts := modelThresholds(cfg.Eviction.Thresholds)
	alloc := int64(u.MemoryCapacity) - refmodel.HardMemoryReservation(ts, int64(u.MemoryCapacity))
	podsWS := int64(u.MemoryWorkingSet - c.h.Runtime.Node().MemoryBase)
	obs := map[refmodel.Signal][2]int64{ // available, capacity
		refmodel.SignalMemoryAvailable:            {int64(u.MemoryAvailable), int64(u.MemoryCapacity)},
		refmodel.SignalAllocatableMemoryAvailable: {max(alloc-podsWS, 0), alloc},
		refmodel.SignalNodeFsAvailable:            {int64(u.Nodefs.Available), int64(u.Nodefs.Capacity)},
		refmodel.SignalNodeFsInodesFree:           {int64(u.Nodefs.InodesFree), int64(u.Nodefs.Inodes)},
		refmodel.SignalImageFsAvailable:           {int64(u.Imagefs.Available), int64(u.Imagefs.Capacity)},
		refmodel.SignalImageFsInodesFree:          {int64(u.Imagefs.InodesFree), int64(u.Imagefs.Inodes)},
		refmodel.SignalPIDAvailable:               {int64(u.PIDCapacity - min(u.PIDsUsed, u.PIDCapacity)), int64(u.PIDCapacity)},
	}
	over := map[corev1.NodeConditionType]bool{}
	for _, t := range ts {
		if o, ok := obs[t.Signal]; ok && t.Met(o[0], o[1]) {
			over[refmodel.Condition(t.Signal)] = true
		}
	}
	for _, t := range pressureConds {
		since, was := p.met[t]
		switch {
		case over[t] && !was:
			p.met[t] = now
		case !over[t] && was:
			delete(p.met, t)
		}
		// The current agent could have seen the run only if it lasted a
		// sampling period while that agent ran with a working runtime
		// (after a restart the first samples may fail while the runtime
		// restarts too, and the node status then has no observation).
		if seen := max(since, p.agentSince, c.suite.runtimeImpaired); over[t] && was && now-seen >= evictionPeriod+2*time.Second {
			p.longMet[t], p.longBy[t] = now, c.h.Restarts()
		}
		if over[t] && was && now-since >= pressureSetIn && !p.apiConds[t] && !c.impairedWithin(pressureSetIn) {
			key := "set/" + string(t)
			if !p.reported[key] {
				p.reported[key] = true
				c.fail("pressure-conditions", "%s not set though its signal has been over a threshold for %v", t, now-since)
			}
		}
		if !over[t] {
			delete(p.reported, "set/"+string(t))
		}
	}
}

// checkAdmission: the pods running (not terminal, not being deleted) never
// outnumber maxPods nor request more cpu or memory than allocatable, for
// longer than admissionSlack.
func (c *Checker) checkAdmission(truth []RuntimeContainer) {
	p := c.pressure
	now := c.h.K.Elapsed()
	cfg := c.h.AgentConfig()
	maxPods := cfg.NodeStatus.MaxPods
	if maxPods <= 0 {
		maxPods = 110
	}
	m := c.h.Runtime.Node()
	allocMem := int64(m.MemoryCapacity) - refmodel.HardMemoryReservation(modelThresholds(cfg.Eviction.Thresholds), int64(m.MemoryCapacity))
	allocCPU := int64(m.CPUCapacityMilli)
	running := map[types.UID]bool{}
	for _, ct := range truth {
		if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running[ct.PodUID] = true
		}
	}
	var n int
	var cpu, mem int64
	for uid := range running {
		pod := p.pods[uid]
		if pod == nil || pod.DeletionTimestamp != nil || refmodel.IsTerminal(pod.Status.Phase) || refmodel.IsStatic(pod) {
			continue
		}
		n++
		pod = c.allocatedPod(pod) // a resize the agent has not accepted does not count
		cpu += refmodel.Request(pod, corev1.ResourceCPU)
		mem += refmodel.Request(pod, corev1.ResourceMemory)
	}
	if n <= maxPods && cpu <= allocCPU && mem <= allocMem {
		p.overSince = -1
		return
	}
	if p.overSince < 0 {
		p.overSince = now
	}
	if now-p.overSince >= admissionSlack && !c.impairedWithin(admissionSlack) && !p.reported["admission"] {
		p.reported["admission"] = true
		c.fail("admission", "%d pods run (max %d) requesting %dm cpu of %dm and %d bytes of memory of %d", n, maxPods, cpu, allocCPU, mem, allocMem)
	}
}

// modelThresholds is the agent's configured thresholds (settings, read
// field by field) in the reference model's terms.
func modelThresholds(ts []eviction.Threshold) []refmodel.Threshold {
	out := make([]refmodel.Threshold, len(ts))
	for i, t := range ts {
		out[i] = refmodel.Threshold{Signal: refmodel.Signal(t.Signal), Quantity: t.Value.Quantity, Percentage: t.Value.Percentage, Hard: t.GracePeriod == 0}
	}
	return out
}
