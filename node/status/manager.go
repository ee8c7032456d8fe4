package status

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/termmsg"
)

// Config tunes the Manager. Zero fields take their defaults.
type Config struct {
	// ResyncPeriod is how often every cached status is compared with the
	// API's and written again if they differ (default 10 s).
	ResyncPeriod time.Duration
	// RetryBackoff is the delay before retrying a write that failed; it
	// doubles with each failure in a row (default 1 s).
	RetryBackoff time.Duration
	// MaxRetryBackoff caps the retry delay (default ResyncPeriod).
	MaxRetryBackoff time.Duration
	// RequestTimeout bounds each apiserver call (default 10 s), so one hung
	// call cannot stall every other pod's status for long.
	RequestTimeout time.Duration
	// ConflictRetries is how many times a write that hit a conflict is
	// retried at once with a fresh read before it backs off (default 5).
	ConflictRetries int
}

func (c Config) withDefaults() Config {
	if c.ResyncPeriod <= 0 {
		c.ResyncPeriod = 10 * time.Second
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	if c.MaxRetryBackoff <= 0 {
		c.MaxRetryBackoff = c.ResyncPeriod
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.ConflictRetries <= 0 {
		c.ConflictRetries = 5
	}
	return c
}

// Manager caches the newest status of every pod and keeps it written to the
// apiserver. One writer task issues every write, one pod at a time, in the
// order the pods changed, so writes for a pod are never concurrent and only
// the newest pending version of a pod is ever written.
type Manager struct {
	d    deps.Core
	api  deps.PodAPI
	cfg  Config
	log  *slog.Logger
	wake deps.Signal

	mu     sync.Mutex
	pods   map[types.UID]*entry
	queue  []types.UID
	queued map[types.UID]bool
}

// entry is what the manager knows of one pod.
type entry struct {
	pod    *corev1.Pod
	status corev1.PodStatus
	// version counts the accepted status changes.
	version uint64
	// deletable: the agent said the pod may be deleted from the API.
	deletable bool
	// done: nothing more to write (the pod was deleted, or is gone).
	done bool
	// failures in a row, and the earliest time of the next attempt.
	failures  int
	notBefore time.Time
	retry     deps.Timer
}

// NewManager returns a manager writing through pods; Start runs it.
func NewManager(d deps.Core, pods deps.PodAPI, cfg Config) *Manager {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		d:      d,
		api:    pods,
		cfg:    cfg.withDefaults(),
		log:    log.With("component", "status"),
		wake:   d.Tasks.NewSignal("status-writes"),
		pods:   map[types.UID]*entry{},
		queued: map[types.UID]bool{},
	}
}

// Start spawns the writer and resync tasks; they end when ctx does.
func (m *Manager) Start(ctx context.Context) {
	m.d.Tasks.Go("status-writer", func() { m.runWriter(ctx) })
	m.d.Tasks.Go("status-resync", func() { m.runResync(ctx) })
}

// SetPodStatus caches s as pod's newest status and queues its write. A
// status that would leave a terminal phase, or restart a container its
// restart policy forbids restarting, compared with the cached status and
// with pod.Status, is refused (and logged).
func (m *Manager) SetPodStatus(pod *corev1.Pod, s corev1.PodStatus) {
	m.mu.Lock()
	changed := m.setLocked(pod, s)
	m.mu.Unlock()
	if changed {
		m.wake.Notify()
	}
}

// PodStatus returns the newest cached status of the pod.
func (m *Manager) PodStatus(uid types.UID) (corev1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pods[uid]
	if e == nil || e.version == 0 {
		return corev1.PodStatus{}, false
	}
	return *e.status.DeepCopy(), true
}

// WithCachedStatus returns pod carrying its newest cached status, the
// previous status Generate expects; pod itself when nothing is cached or
// when the API already holds a terminal phase the cache has not seen.
func (m *Manager) WithCachedStatus(pod *corev1.Pod) *corev1.Pod {
	s, ok := m.PodStatus(pod.UID)
	if !ok || (podutil.IsTerminal(pod.Status.Phase) && !podutil.IsTerminal(s.Phase)) {
		return pod
	}
	p := *pod
	p.Status = s
	return &p
}

// TerminatePod records that all of pod's containers have stopped for good:
// its newest status (cached, else pod.Status) is passed through Terminate —
// every container not terminated is reported terminated, with exit code
// 137 and ContainerStatusUnknown when it was never seen to finish, and the
// phase becomes terminal — and that status is queued as the final write.
func (m *Manager) TerminatePod(pod *corev1.Pod) {
	m.mu.Lock()
	base := pod.Status
	if e := m.pods[pod.UID]; e != nil && e.version > 0 {
		base = e.status
	}
	if podutil.IsTerminal(pod.Status.Phase) && !podutil.IsTerminal(base.Phase) {
		base = *base.DeepCopy()
		base.Phase = pod.Status.Phase
	}
	changed := m.setLocked(pod, Terminate(pod, base, m.d.Clock.Now()))
	m.mu.Unlock()
	if changed {
		m.wake.Notify()
	}
}

// SetPodDeletable records that the pod is deleted (its DeletionTimestamp is
// set), all its containers are stopped and its sandbox is gone: the manager
// writes the pod's last status, then deletes the pod object with grace 0
// and a UID precondition. A pod already gone counts as deleted. Static pods
// and mirror pods are never deleted this way. The pod must have a cached
// status (SetPodStatus or TerminatePod first).
func (m *Manager) SetPodDeletable(uid types.UID) {
	m.mu.Lock()
	e := m.pods[uid]
	if e == nil {
		m.mu.Unlock()
		m.log.Warn("pod marked deletable has no status; not deleting", "uid", uid)
		return
	}
	if e.deletable || e.done {
		m.mu.Unlock()
		return
	}
	e.deletable = true
	m.enqueueLocked(uid)
	m.mu.Unlock()
	m.wake.Notify()
}

// RemovePod forgets a pod that is gone from the API.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.pods[uid]; e != nil && e.retry != nil {
		e.retry.Stop()
	}
	delete(m.pods, uid)
	delete(m.queued, uid)
}

// setLocked caches s for pod if the transition is legal and the status is
// new; it reports whether a write was queued.
func (m *Manager) setLocked(pod *corev1.Pod, s corev1.PodStatus) bool {
	next := s.DeepCopy()
	normalize(next)
	termmsg.Cap(pod, next)
	e := m.pods[pod.UID]
	if e != nil && e.done {
		return false
	}
	if err := checkTransition(pod, &pod.Status, next); err != nil {
		m.log.Error("refusing pod status", "pod", podKey(pod), "err", err)
		return false
	}
	if e != nil && e.version > 0 {
		if err := checkTransition(pod, &e.status, next); err != nil {
			m.log.Error("refusing pod status", "pod", podKey(pod), "err", err)
			return false
		}
	}
	if e == nil {
		e = &entry{}
		m.pods[pod.UID] = e
	}
	e.pod = pod.DeepCopy()
	if e.version > 0 && equality.Semantic.DeepEqual(&e.status, next) {
		return false
	}
	e.status = *next
	e.version++
	m.enqueueLocked(pod.UID)
	return true
}

func (m *Manager) enqueueLocked(uid types.UID) {
	if !m.queued[uid] {
		m.queued[uid] = true
		m.queue = append(m.queue, uid)
	}
}

func (m *Manager) enqueue(uid types.UID) {
	m.mu.Lock()
	_, known := m.pods[uid]
	if known {
		m.enqueueLocked(uid)
	}
	m.mu.Unlock()
	if known {
		m.wake.Notify()
	}
}

// pop takes the next queued pod.
func (m *Manager) pop() (types.UID, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.queue) > 0 {
		uid := m.queue[0]
		m.queue[0] = ""
		m.queue = m.queue[1:]
		if m.queued[uid] {
			delete(m.queued, uid)
			return uid, true
		}
	}
	m.queue = nil
	return "", false
}

func (m *Manager) runWriter(ctx context.Context) {
	for ctx.Err() == nil {
		uid, ok := m.pop()
		if !ok {
			if m.wake.Wait(ctx) != nil {
				return
			}
			continue
		}
		m.syncPod(ctx, uid)
	}
}

// runResync queues every pod, in UID order, each ResyncPeriod.
func (m *Manager) runResync(ctx context.Context) {
	tk := m.d.Tasks.NewTicker("status-resync", m.cfg.ResyncPeriod)
	defer tk.Stop()
	for tk.Wait(ctx) == nil {
		m.mu.Lock()
		uids := make([]types.UID, 0, len(m.pods))
		for uid, e := range m.pods {
			if !e.done {
				uids = append(uids, uid)
			}
		}
		slices.Sort(uids)
		for _, uid := range uids {
			m.enqueueLocked(uid)
		}
		m.mu.Unlock()
		if len(uids) > 0 {
			m.wake.Notify()
		}
	}
}

// snapshot is what one sync of a pod works from.
type snapshot struct {
	pod       *corev1.Pod
	status    corev1.PodStatus
	version   uint64
	deletable bool
}

// errGone means the pod this status belongs to no longer exists in the API.
var errGone = errors.New("pod is gone from the API")

// syncPod writes the newest status of one pod if the API's differs, then
// deletes the pod if it is deletable.
func (m *Manager) syncPod(ctx context.Context, uid types.UID) {
	m.mu.Lock()
	e := m.pods[uid]
	if e == nil || e.done || m.d.Clock.Now().Before(e.notBefore) {
		// Gone, finished, or backing off: its retry timer queues it again.
		m.mu.Unlock()
		return
	}
	snap := snapshot{pod: e.pod, status: e.status, version: e.version, deletable: e.deletable}
	m.mu.Unlock()

	adopted, err := m.writeStatus(ctx, snap)
	m.mu.Lock()
	if m.pods[uid] != e {
		m.mu.Unlock()
		return // removed meanwhile
	}
	if adopted != nil && e.version == snap.version {
		e.status = *adopted
		e.version++
		snap.version = e.version
	}
	fresh := e.version == snap.version
	m.mu.Unlock()

	deleted := false
	if err == nil && snap.deletable && fresh {
		// Delete only once the newest status is written; when a newer one
		// came meanwhile it is queued and this runs again after it.
		err = m.deletePod(ctx, snap.pod)
		deleted = err == nil
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pods[uid] != e {
		return
	}
	switch {
	case err == nil:
		e.failures, e.notBefore = 0, time.Time{}
		if e.retry != nil {
			e.retry.Stop()
		}
		if deleted {
			e.done = true
			m.log.Info("pod deleted", "pod", podKey(snap.pod), "uid", uid)
		}
	case errors.Is(err, errGone):
		e.done = true
		m.log.Info("pod gone from the API; status no longer written", "pod", podKey(snap.pod), "uid", uid)
	default:
		e.failures++
		retry := backoff.Curve{Initial: m.cfg.RetryBackoff, Max: m.cfg.MaxRetryBackoff}
		d := retry.Delay(e.failures)
		e.notBefore = m.d.Clock.Now().Add(d)
		if e.retry == nil {
			e.retry = m.d.Tasks.AfterFunc("status-retry", d, func() { m.enqueue(uid) })
		} else {
			e.retry.Reset(d)
		}
		m.log.Warn("pod status write failed; retrying", "pod", podKey(snap.pod), "uid", uid,
			"failures", e.failures, "backoff", d, "err", err)
	}
}

// writeStatus writes snap's status unless the API already holds it. When the
// API holds a terminal phase the status does not have, the status is first
// made terminal with that phase (Terminate) and returned as adopted.
func (m *Manager) writeStatus(ctx context.Context, snap snapshot) (adopted *corev1.PodStatus, err error) {
	pod := snap.pod
	for attempt := 0; ; attempt++ {
		api, err := m.getPod(ctx, pod)
		if err != nil {
			return nil, err
		}
		want := snap.status
		adopted = nil
		if podutil.IsTerminal(api.Status.Phase) && want.Phase != api.Status.Phase {
			m.log.Warn("API holds a terminal phase; keeping it", "pod", podKey(pod),
				"api", api.Status.Phase, "ours", want.Phase)
			base := *want.DeepCopy()
			base.Phase = api.Status.Phase
			want = Terminate(pod, base, m.d.Clock.Now())
			normalize(&want)
			adopted = &want
		}
		current := api.Status.DeepCopy()
		normalize(current)
		merged := merge(want, *current)
		if equality.Semantic.DeepEqual(current, &merged) {
			return adopted, nil
		}
		upd := api.DeepCopy()
		upd.Status = merged
		rctx, cancel := m.d.Clock.WithTimeout(ctx, m.cfg.RequestTimeout)
		_, err = m.api.UpdatePodStatus(rctx, upd)
		cancel()
		switch {
		case err == nil:
			return adopted, nil
		case apierrors.IsConflict(err) && attempt < m.cfg.ConflictRetries:
			continue
		case apierrors.IsNotFound(err) && !podutil.IsStaticPod(pod):
			return nil, errGone
		default:
			return nil, fmt.Errorf("update status of pod %s: %w", podKey(pod), err)
		}
	}
}

// getPod reads the API object pod's status lives in: the pod itself (same
// UID), or for a static pod its mirror pod.
func (m *Manager) getPod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	rctx, cancel := m.d.Clock.WithTimeout(ctx, m.cfg.RequestTimeout)
	api, err := m.api.GetPod(rctx, pod.Namespace, pod.Name)
	cancel()
	static := podutil.IsStaticPod(pod)
	switch {
	case apierrors.IsNotFound(err) && static:
		return nil, fmt.Errorf("mirror pod of static pod %s not found", podKey(pod))
	case apierrors.IsNotFound(err):
		return nil, errGone
	case err != nil:
		return nil, fmt.Errorf("get pod %s: %w", podKey(pod), err)
	}
	if static {
		want := pod.Annotations[podutil.AnnotationConfigHash]
		if want == "" {
			want = string(pod.UID)
		}
		if got, ok := api.Annotations[podutil.AnnotationConfigMirror]; !ok || got != want {
			return nil, fmt.Errorf("pod %s in the API is not the mirror of static pod %s", podKey(api), pod.UID)
		}
		return api, nil
	}
	if api.UID != pod.UID {
		return nil, errGone // replaced by a pod of the same name
	}
	return api, nil
}

// deletePod deletes pod from the API with grace 0 and its UID as
// precondition; a pod already gone counts as deleted. Static and mirror
// pods are left alone.
func (m *Manager) deletePod(ctx context.Context, pod *corev1.Pod) error {
	if podutil.IsStaticPod(pod) || podutil.IsMirrorPod(pod) {
		return nil
	}
	rctx, cancel := m.d.Clock.WithTimeout(ctx, m.cfg.RequestTimeout)
	err := m.api.DeletePod(rctx, pod.Namespace, pod.Name, pod.UID)
	cancel()
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s (uid %s): %w", podKey(pod), pod.UID, err)
	}
	return nil
}

// merge is ours as it should be written over api: conditions others own
// stay as the API holds them (a DisruptionTarget the agent adds is kept),
// and the fields the agent does not own keep the API's values. The start
// time and pod IPs never change once set.
func merge(ours, api corev1.PodStatus) corev1.PodStatus {
	out := *ours.DeepCopy()
	var conds []corev1.PodCondition
	for _, c := range api.Conditions {
		if !IsKubeletCondition(c.Type) {
			conds = append(conds, c)
		}
	}
	for _, c := range ours.Conditions {
		if c.Type == corev1.DisruptionTarget && !hasCondition(api.Conditions, c.Type) {
			conds = append(conds, c)
		}
	}
	for _, c := range ours.Conditions {
		if IsKubeletCondition(c.Type) {
			conds = append(conds, c)
		}
	}
	out.Conditions = conds
	out.NominatedNodeName = api.NominatedNodeName
	out.ResourceClaimStatuses = api.ResourceClaimStatuses
	out.ExtendedResourceClaimStatus = api.ExtendedResourceClaimStatus
	if api.StartTime != nil {
		out.StartTime = api.StartTime.DeepCopy()
	}
	if len(api.PodIPs) > 0 || api.PodIP != "" {
		out.PodIP, out.PodIPs = api.PodIP, slices.Clone(api.PodIPs)
	}
	return *out.DeepCopy()
}

func hasCondition(list []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range list {
		if c.Type == t {
			return true
		}
	}
	return false
}

// normalize truncates every time in s to whole seconds, the precision the
// API keeps, so a status read back compares equal to the one written.
func normalize(s *corev1.PodStatus) {
	if s.StartTime != nil {
		s.StartTime.Time = s.StartTime.Truncate(time.Second)
	}
	for i := range s.Conditions {
		c := &s.Conditions[i]
		c.LastProbeTime.Time = c.LastProbeTime.Truncate(time.Second)
		c.LastTransitionTime.Time = c.LastTransitionTime.Truncate(time.Second)
	}
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			normalizeState(&list[i].State)
			normalizeState(&list[i].LastTerminationState)
		}
	}
}

func normalizeState(st *corev1.ContainerState) {
	if r := st.Running; r != nil {
		r.StartedAt.Time = r.StartedAt.Truncate(time.Second)
	}
	if t := st.Terminated; t != nil {
		t.StartedAt.Time = t.StartedAt.Truncate(time.Second)
		t.FinishedAt.Time = t.FinishedAt.Truncate(time.Second)
	}
}

func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
