package eviction

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/stats"
)

// DefaultPeriod is the monitoring interval.
const DefaultPeriod = 10 * time.Second

// hardEvictionGrace is the grace period of a pod evicted for a hard
// threshold, as the kubelet's.
const hardEvictionGrace = 1

// Cleanup bounds: after an eviction the manager waits for the pod's
// containers to be gone (at most cleanupTimeout, checking every
// cleanupPoll) before its next cycle, as the kubelet does.
const (
	cleanupTimeout = 30 * time.Second
	cleanupPoll    = time.Second
)

// Pods is the agent's side of evictions.
type Pods interface {
	// ActivePods are the pods that may be evicted: admitted, not
	// terminal and not terminating, in creation order.
	ActivePods() []*corev1.Pod
	// Evict stops pod with grace seconds and fails it: phase Failed,
	// reason Evicted, message and the DisruptionTarget condition; it is
	// never restarted.
	Evict(pod *corev1.Pod, grace int64, message string, condition corev1.PodCondition)
	// PodCleanedUp reports whether the pod has no running container left.
	PodCleanedUp(uid types.UID) bool
}

// Reclaimer frees node-level resources without evicting pods.
type Reclaimer interface {
	// ReclaimContainers removes dead containers the garbage collection
	// policy lets go.
	ReclaimContainers(ctx context.Context) error
	// ReclaimImages removes images no container uses (never a pinned one
	// or the sandbox image).
	ReclaimImages(ctx context.Context) error
}

// Observer counts evictions (kubelet_evictions) and cycles; nil counts
// none. ObserveEvictionCycle is called at the end of every cycle that got
// a stats sample, once its decisions are taken (pods over their local
// storage limits or the ranked pod evicted, node-level reclaim done).
type Observer interface {
	ObserveEviction(signal string)
	ObserveEvictionCycle()
}

// Ports are what a Manager reads and acts through.
type Ports struct {
	Stats   *stats.Provider
	Pods    Pods
	Reclaim Reclaimer
	// Events records EvictionThresholdMet on the node and Evicted on
	// pods; nil records none.
	Events  deps.EventSink
	Metrics Observer
	// MemoryThreshold wakes the manager for a cycle at once when the
	// node's working set crosses capacity minus the hard memory.available
	// threshold; nil: memory is seen at the periodic cycles only.
	MemoryThreshold deps.MemoryThresholdNotifier
}

// Manager runs the eviction cycle on the clock.
type Manager struct {
	d        deps.Core
	ports    Ports
	cfg      Config
	nodeName string
	// allocatableMemory feeds allocatableMemory.available (0: none).
	allocatableMemory int64
	log               *slog.Logger

	// armedAt is the working set the memory threshold notifier was last
	// armed for (0: not armed); only the manager's task touches it.
	armedAt uint64

	mu    sync.Mutex
	state State
	conds []corev1.NodeConditionType
	// observed is false until the first cycle decided the conditions.
	observed bool
}

// New returns a Manager for node nodeName; allocatableMemory is the
// node's allocatable memory (0 leaves allocatableMemory.available out).
func New(d deps.Core, ports Ports, cfg Config, nodeName string, allocatableMemory int64) *Manager {
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.PressureTransitionPeriod <= 0 {
		cfg.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{d: d, ports: ports, cfg: cfg, nodeName: nodeName, allocatableMemory: allocatableMemory, log: log.With("component", "eviction")}
}

// notifierRetry is how long the memory threshold task waits after the
// notifier failed before it waits on it again.
const notifierRetry = DefaultPeriod

// Start spawns the "eviction manager" task, one cycle every Period until
// ctx ends, and one more at once whenever the memory threshold notifier
// fires (a wake-up pending while a cycle runs is kept, at most one).
func (m *Manager) Start(ctx context.Context) {
	wake := m.d.Tasks.NewSignal("eviction wake")
	m.d.Tasks.Go("eviction ticker", func() {
		t := m.d.Tasks.NewTicker("eviction", m.cfg.Period)
		defer t.Stop()
		for t.Wait(ctx) == nil {
			if m.d.Fault(deps.FaultEvictionTickLate) {
				continue // this cycle late by one period
			}
			wake.Notify()
		}
	})
	if n := m.ports.MemoryThreshold; n != nil {
		m.d.Tasks.Go("memory threshold notifier", func() { m.followMemoryThreshold(ctx, n, wake) })
	}
	m.d.Tasks.Go("eviction manager", func() {
		for {
			for _, evicted := range m.Cycle(ctx) {
				m.waitForCleanup(ctx, evicted.UID)
			}
			if wake.Wait(ctx) != nil {
				return
			}
		}
	})
}

// followMemoryThreshold wakes the manager each time the notifier fires.
func (m *Manager) followMemoryThreshold(ctx context.Context, n deps.MemoryThresholdNotifier, wake deps.Signal) {
	for {
		err := n.Next(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			m.log.Warn("memory threshold notifier failed", "error", err.Error(), "retry", notifierRetry)
			if m.d.Tasks.Sleep(ctx, notifierRetry) != nil {
				return
			}
			continue
		}
		m.log.Info("memory threshold crossed: running an eviction cycle now")
		wake.Notify()
	}
}

// armMemoryThreshold (re)arms the notifier for the working set at which
// the hard memory.available threshold is met, as the kubelet's memcg
// notifier: capacity minus the threshold.
func (m *Manager) armMemoryThreshold(capacity uint64) {
	n := m.ports.MemoryThreshold
	if n == nil || capacity == 0 {
		return
	}
	reserve := HardMemoryReservation(m.cfg.Thresholds, int64(capacity))
	if reserve <= 0 || uint64(reserve) >= capacity {
		return
	}
	at := capacity - uint64(reserve)
	if err := n.SetThreshold(at); err != nil {
		m.log.Warn("could not arm the memory threshold notifier", "workingSet", at, "error", err.Error())
		return
	}
	if at != m.armedAt {
		m.log.Info("memory threshold notifier armed", "workingSet", at)
		m.armedAt = at
	}
}

// Conditions are the node's pressure conditions as the last cycle decided.
func (m *Manager) Conditions() []corev1.NodeConditionType {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.conds)
}

// NodePressure reports the pressure conditions (nodestatus.Pressure).
func (m *Manager) NodePressure() (memory, disk, pid bool) {
	c := m.Conditions()
	return HasCondition(c, corev1.NodeMemoryPressure), HasCondition(c, corev1.NodeDiskPressure), HasCondition(c, corev1.NodePIDPressure)
}

// Cycle runs one eviction cycle and returns the pods it evicted: every
// pod over a local storage limit, else at most one for a threshold.
func (m *Manager) Cycle(ctx context.Context) []*corev1.Pod {
	sample, err := m.ports.Stats.Refresh(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("eviction cycle skipped: no stats", "error", err.Error())
		}
		return nil
	}
	if m.ports.Metrics != nil {
		defer m.ports.Metrics.ObserveEvictionCycle()
	}
	m.armMemoryThreshold(sample.Machine.MemoryBytes)
	pods := m.ports.Pods.ActivePods()
	sum := sample.Summary(m.nodeName, pods)
	obs, usages := Observe(sample, sum, m.allocatableMemory)
	now := m.d.Clock.Now()
	m.mu.Lock()
	d := m.state.Evaluate(m.cfg, obs, now)
	if !slices.Equal(d.Conditions, m.conds) {
		m.log.Info("node pressure conditions changed", "from", fmt.Sprint(m.conds), "to", fmt.Sprint(d.Conditions))
	}
	m.conds, m.observed = d.Conditions, true
	m.mu.Unlock()

	// As the kubelet: pods over their local storage limits are evicted
	// first, and then no threshold is acted upon this cycle.
	if evicted := m.localStorageEvictions(sample, sum, pods); len(evicted) > 0 {
		return evicted
	}
	t, ok := firstReclaimable(d.Act)
	if !ok {
		return nil
	}
	r := signalResource(t.Signal)
	o := obs[t.Signal]
	m.log.Info("eviction threshold met, attempting to reclaim", "signal", string(t.Signal), "resource", string(r),
		"available", o.Available, "threshold", t.Value.Amount(o.Capacity))
	m.nodeEvent(corev1.EventTypeWarning, "EvictionThresholdMet", fmt.Sprintf("Attempting to reclaim %s", r))
	if m.reclaimNodeLevel(ctx, t) {
		m.log.Info("node-level reclaim relieved the pressure without evicting", "signal", string(t.Signal))
		return nil
	}
	if ctx.Err() != nil {
		return nil
	}
	cands := Candidates(pods, usages)
	Rank(t.Signal, cands)
	for _, c := range cands {
		if podutil.IsCriticalPod(c.Pod) {
			continue
		}
		m.evict(t, obs, c)
		return []*corev1.Pod{c.Pod}
	}
	m.log.Warn("eviction threshold met but no pod can be evicted", "signal", string(t.Signal), "active", len(pods))
	return nil
}

// firstReclaimable is the first threshold with a resource to reclaim.
func firstReclaimable(act []Threshold) (Threshold, bool) {
	for _, t := range act {
		if signalResource(t.Signal) != "" {
			return t, true
		}
	}
	return Threshold{}, false
}

// reclaimNodeLevel frees what t's signal can get back without evicting
// (dead containers and unused images, for disk signals) and reports
// whether every threshold is then clear by its minimum reclaim.
func (m *Manager) reclaimNodeLevel(ctx context.Context, t Threshold) bool {
	if m.ports.Reclaim == nil || !isDiskSignal(t.Signal) {
		return false
	}
	if err := m.ports.Reclaim.ReclaimContainers(ctx); err != nil {
		m.log.Warn("reclaiming dead containers failed", "error", err.Error())
	}
	if err := m.ports.Reclaim.ReclaimImages(ctx); err != nil {
		m.log.Warn("reclaiming unused images failed", "error", err.Error())
	}
	// Node-level signals only: the pods' volumes and logs, measured by
	// this cycle's sample, are not walked again.
	sample, err := m.ports.Stats.RefreshNode(ctx)
	if err != nil {
		return false
	}
	obs, _ := Observe(sample, sample.Summary(m.nodeName, nil), m.allocatableMemory)
	return len(metOf(m.cfg.Thresholds, obs, true)) == 0
}

func isDiskSignal(s Signal) bool {
	r := signalResource(s)
	return r == corev1.ResourceEphemeralStorage || r == ResourceInodes
}

// evict evicts one candidate for t.
func (m *Manager) evict(t Threshold, obs Observations, c Candidate) {
	grace := int64(hardEvictionGrace)
	if !t.Hard() {
		// As the kubelet: evictionMaxPodGracePeriod, or the pod's own
		// grace when it sets a shorter one (so the default 0 stops a pod
		// at once).
		grace = m.cfg.MaxPodGracePeriod
		if g := c.Pod.Spec.TerminationGracePeriodSeconds; g != nil {
			grace = min(grace, *g)
		}
	}
	msg := Message(t, obs, c)
	m.log.Info("evicting pod", "pod", c.Pod.Namespace+"/"+c.Pod.Name, "uid", string(c.Pod.UID),
		"signal", string(t.Signal), "grace", grace, "message", msg)
	m.evictPod(c.Pod, grace, msg, string(t.Signal))
}

// localStorageEvictions evicts every active pod over one of its local
// storage limits (CheckLocalStorage), critical pods excepted, and returns
// them.
func (m *Manager) localStorageEvictions(sample stats.Sample, sum *statsv1alpha1.Summary, pods []*corev1.Pod) []*corev1.Pod {
	storage := ObserveLocalStorage(sample, sum)
	dedicatedImageFs := sample.Usage.ImageFSCapacityBytes > 0
	var evicted []*corev1.Pod
	for _, pod := range pods {
		ps, ok := storage[pod.UID]
		if !ok {
			continue
		}
		v, over := CheckLocalStorage(pod, ps, dedicatedImageFs)
		if !over {
			continue
		}
		if podutil.IsCriticalPod(pod) {
			m.log.Warn("critical pod over its local storage limit is not evicted", "pod", pod.Namespace+"/"+pod.Name, "message", v.Message)
			continue
		}
		m.log.Info("evicting pod over its local storage limit", "pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID),
			"signal", v.Signal, "grace", localStorageGrace, "message", v.Message)
		m.evictPod(pod, localStorageGrace, v.Message, v.Signal)
		evicted = append(evicted, pod)
	}
	return evicted
}

// evictPod records the Evicted event, fails and stops pod with grace and
// counts the eviction under signal.
func (m *Manager) evictPod(pod *corev1.Pod, grace int64, msg, signal string) {
	if m.ports.Events != nil {
		ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
		m.ports.Events.Event(ref, corev1.EventTypeWarning, Reason, msg)
	}
	cond := corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonTerminationByKubelet,
		Message: msg, ObservedGeneration: pod.Generation,
	}
	m.ports.Pods.Evict(pod, grace, msg, cond)
	if m.ports.Metrics != nil {
		m.ports.Metrics.ObserveEviction(signal)
	}
}

// waitForCleanup waits until the evicted pod has no running container, at
// most cleanupTimeout.
func (m *Manager) waitForCleanup(ctx context.Context, uid types.UID) {
	deadline := m.d.Clock.Now().Add(cleanupTimeout)
	for !m.ports.Pods.PodCleanedUp(uid) {
		if !m.d.Clock.Now().Before(deadline) {
			m.log.Warn("evicted pod not cleaned up in time", "uid", string(uid), "timeout", cleanupTimeout)
			return
		}
		if m.d.Tasks.Sleep(ctx, cleanupPoll) != nil {
			return
		}
	}
}

func (m *Manager) nodeEvent(eventType, reason, message string) {
	if m.ports.Events == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: m.nodeName, UID: types.UID(m.nodeName)}
	m.ports.Events.Event(ref, eventType, reason, message)
}
