// Package shutdown is graceful node shutdown: when the machine announces
// that it is about to power off (deps.ShutdownNotifier: systemd-logind on
// a real node, a node event in the simulator), the node turns NotReady
// ("node is shutting down"), new pods are refused, and the running pods
// are stopped group by group, lowest priority first, each group within
// its share of the shutdown grace period, before the delay lock that held
// the shutdown back is released.
//
// Groups come from shutdownGracePeriod and shutdownGracePeriodCriticalPods
// (GroupsFor: the non-critical pods get the difference, then the critical
// pods the critical part) or from shutdownGracePeriodByPodPriority. A pod
// belongs to the group of the highest priority at or below its own (the
// lowest group when below all). Each pod is stopped with its group's grace
// period, or its own terminationGracePeriodSeconds when shorter, and fails
// with reason Terminated and a DisruptionTarget condition, as the kubelet
// does. The next group starts once every pod of this one has stopped, or
// once this group's grace period is over.
package shutdown

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// The kubelet's words for pods stopped by a node shutdown, and for the
// node while it shuts down.
const (
	// Reason is the failed pod's status reason.
	Reason = "Terminated"
	// Message is the failed pod's status message and its DisruptionTarget
	// condition's.
	Message = "Pod was terminated in response to imminent node shutdown."
	// NotAdmittedReason and NotAdmittedMessage reject a pod that arrives
	// while the node shuts down.
	NotAdmittedReason  = "NodeShutdown"
	NotAdmittedMessage = "Pod was rejected as the node is shutting down."
	// NodeMessage is the node's NotReady cause while it shuts down.
	NodeMessage = "node is shutting down"
	// EventReason is the reason of the node events.
	EventReason = "NodeShutdown"
)

// pollPeriod is how often a group's pods are checked for having stopped.
const pollPeriod = time.Second

// Group is a band of pod priorities and its share of the shutdown grace
// period.
type Group struct {
	// Priority is the lowest priority of the band.
	Priority int32
	// GracePeriod is how long the band's pods may take to stop.
	GracePeriod time.Duration
}

// GroupsFor turns shutdownGracePeriod and shutdownGracePeriodCriticalPods
// into the two groups they mean: pods below system-critical priority get
// total-critical, critical ones critical. Nil (off) when total is zero or
// critical exceeds it.
func GroupsFor(total, critical time.Duration) []Group {
	if total <= 0 || critical < 0 || critical > total {
		return nil
	}
	return []Group{
		{Priority: 0, GracePeriod: total - critical},
		{Priority: podutil.SystemCriticalPriority, GracePeriod: critical},
	}
}

// Total is the time the shutdown is held back: the sum of the groups'
// grace periods.
func Total(groups []Group) time.Duration {
	var sum time.Duration
	for _, g := range groups {
		sum += g.GracePeriod
	}
	return sum
}

// Assign sorts pods into groups (sorted by priority, lowest first): the
// i-th result holds the pods of groups[i], in the order given.
func Assign(groups []Group, pods []*corev1.Pod) [][]*corev1.Pod {
	out := make([][]*corev1.Pod, len(groups))
	if len(groups) == 0 {
		return out
	}
	for _, pod := range pods {
		p := podutil.Priority(pod)
		i := 0
		for j, g := range groups {
			if g.Priority <= p {
				i = j
			}
		}
		out[i] = append(out[i], pod)
	}
	return out
}

// PodGrace is the grace period a pod is stopped with in group g: the
// group's, or the pod's own terminationGracePeriodSeconds when shorter.
func PodGrace(g Group, pod *corev1.Pod) int64 {
	grace := int64(g.GracePeriod / time.Second)
	if own := pod.Spec.TerminationGracePeriodSeconds; own != nil && *own < grace {
		grace = *own
	}
	return max(grace, 0)
}

// Pods is the agent's side of the shutdown.
type Pods interface {
	// MayRunContainers are the pods whose containers may still run
	// (syncing or terminating), oldest first (activepods.MayRunContainers).
	MayRunContainers() []*corev1.Pod
	// Kill stops pod with grace (seconds) and fails it with reason and
	// message, adding cond.
	Kill(pod *corev1.Pod, grace int64, reason, message string, cond corev1.PodCondition)
	// PodCleanedUp reports whether the pod's kill has completed: every
	// container stopped by the pod's worker, as the kubelet's shutdown
	// waits for its kill's completion, not for a runtime cache that may
	// not have seen a container started since its last relist.
	PodCleanedUp(uid types.UID) bool
}

// StatusSyncer writes the node's status now (its Ready condition changed).
type StatusSyncer interface {
	SyncNow()
}

// Ports are what the shutdown manager reaches.
type Ports struct {
	// Notifier announces the shutdown.
	Notifier deps.ShutdownNotifier
	// Pods stops the pods.
	Pods Pods
	// Status, when set, is told to write the node status at once.
	Status StatusSyncer
	// Events records the node events; nil records none.
	Events deps.EventSink
}

// Manager runs graceful node shutdown.
type Manager struct {
	d        deps.Core
	ports    Ports
	groups   []Group
	nodeName string
	log      *slog.Logger

	mu           sync.Mutex
	shuttingDown bool
}

// New returns a manager stopping pods by groups (sorted here, lowest
// priority first).
func New(d deps.Core, ports Ports, groups []Group, nodeName string) *Manager {
	groups = slices.Clone(groups)
	slices.SortStableFunc(groups, func(a, b Group) int { return int(a.Priority) - int(b.Priority) })
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{d: d, ports: ports, groups: groups, nodeName: nodeName, log: log.With("component", "shutdown")}
}

// ShuttingDown reports whether a shutdown is under way.
func (m *Manager) ShuttingDown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.shuttingDown
}

// Start takes the delay lock and spawns the "node shutdown" task. Without
// a notifier, or when the lock cannot be taken, it logs that graceful node
// shutdown is inactive and does nothing more.
func (m *Manager) Start(ctx context.Context) {
	total := Total(m.groups)
	if m.ports.Notifier == nil || total <= 0 {
		return
	}
	if err := m.ports.Notifier.Inhibit(ctx, total); err != nil {
		m.log.Warn("graceful node shutdown is inactive", "error", err.Error())
		return
	}
	m.log.Info("graceful node shutdown is active", "shutdownGracePeriod", total, "groups", fmt.Sprint(m.groups))
	m.d.Tasks.Go("node shutdown", func() { m.run(ctx) })
}

// run waits for shutdown announcements and acts on them.
func (m *Manager) run(ctx context.Context) {
	for {
		starting, err := m.ports.Notifier.Next(ctx)
		if err != nil {
			return
		}
		m.mu.Lock()
		changed := m.shuttingDown != starting
		m.shuttingDown = starting
		m.mu.Unlock()
		if !changed {
			continue
		}
		if !starting {
			m.log.Info("node shutdown cancelled")
			m.event("Shutdown manager detected shutdown cancellation")
			m.syncStatus()
			if err := m.ports.Notifier.Inhibit(ctx, Total(m.groups)); err != nil {
				m.log.Warn("graceful node shutdown is inactive after a cancelled shutdown", "error", err.Error())
				return
			}
			continue
		}
		m.log.Info("node shutdown detected: stopping pods", "groups", fmt.Sprint(m.groups))
		m.event("Shutdown manager detected shutdown event")
		m.syncStatus()
		m.killPods(ctx)
		if err := m.ports.Notifier.Release(); err != nil {
			m.log.Warn("releasing the shutdown delay lock failed", "error", err.Error())
		}
		m.log.Info("node shutdown: pods stopped, shutdown may proceed")
	}
}

// killPods stops the active pods group by group.
func (m *Manager) killPods(ctx context.Context) {
	groups := Assign(m.groups, m.ports.Pods.MayRunContainers())
	for i, g := range m.groups {
		pods := groups[i]
		if len(pods) == 0 {
			continue
		}
		for _, pod := range pods {
			grace := PodGrace(g, pod)
			m.log.Info("node shutdown: stopping pod", "pod", pod.Namespace+"/"+pod.Name, "gracePeriod", grace, "priority", podutil.Priority(pod))
			m.ports.Pods.Kill(pod, grace, Reason, Message, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: corev1.PodReasonTerminationByKubelet, Message: Message,
			})
		}
		if !m.waitStopped(ctx, pods, g.GracePeriod) {
			m.log.Info("node shutdown: group's grace period over before all its pods stopped", "priority", g.Priority, "gracePeriod", g.GracePeriod)
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// waitStopped waits until none of pods runs (true) or d has passed.
func (m *Manager) waitStopped(ctx context.Context, pods []*corev1.Pod, d time.Duration) bool {
	deadline := m.d.Clock.Now().Add(d)
	for {
		if !slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return !m.ports.Pods.PodCleanedUp(p.UID) }) {
			return true
		}
		left := m.d.Clock.Until(deadline)
		if left <= 0 {
			return false
		}
		if m.d.Tasks.Sleep(ctx, min(pollPeriod, left)) != nil {
			return false
		}
	}
}

func (m *Manager) syncStatus() {
	if m.ports.Status != nil {
		m.ports.Status.SyncNow()
	}
}

// event records a Normal NodeShutdown event on the node.
func (m *Manager) event(message string) {
	if m.ports.Events == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: m.nodeName, UID: types.UID(m.nodeName)}
	m.ports.Events.Event(ref, corev1.EventTypeNormal, EventReason, message)
}
