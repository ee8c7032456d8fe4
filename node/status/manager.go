package status

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/termmsg"
)

// Config tunes the Manager. Zero fields take their defaults.
type Config struct {
	// ResyncPeriod is how often every cached status is compared with the
	// API's, as the pod watch shows it, and written again if they differ
	// (default 10 s). The comparison reads nothing from the apiserver.
	ResyncPeriod time.Duration
	// RetryBackoff is the delay before retrying a write that failed; it
	// doubles with each failure in a row (default 1 s).
	RetryBackoff time.Duration
	// MaxRetryBackoff caps the retry delay (default ResyncPeriod).
	MaxRetryBackoff time.Duration
	// RequestTimeout bounds each apiserver call (default 10 s), so one hung
	// call cannot stall a writer for long.
	RequestTimeout time.Duration
	// Writers is how many writes of different pods may be in flight at
	// once (default 8); the API client's rate limit still applies to all.
	Writers int
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
	if c.Writers <= 0 {
		c.Writers = 8
	}
	return c
}

// Watched is the agent's copy of the API's pods, kept current by the pod
// watch (podsource.Merger): the manager learns from it what the API holds
// without reading the apiserver.
type Watched interface {
	// APIPod returns the pod with uid as the API source last saw it.
	APIPod(uid types.UID) (*corev1.Pod, bool)
	// MirrorPod returns the mirror pod namespace/name as the API source
	// last saw it.
	MirrorPod(namespace, name string) (*corev1.Pod, bool)
	// Pod returns the desired pod with uid, from whichever source has
	// it: a static pod that is not desired any more (its manifest edited
	// or removed) has no status written to the mirror pod of its name.
	Pod(uid types.UID) (*corev1.Pod, bool)
}

// Manager caches the newest status of every pod and keeps it written to the
// apiserver. It compares each status with what the API holds — the pod as
// the watch last delivered it, or as the manager's own last write returned
// it, whichever is newer — and writes only the difference, as a patch with
// the pod's UID as precondition; it never reads a pod to write it. Writer
// tasks (Config.Writers) write different pods concurrently, taking pods in
// the order they changed; one pod is never written by two writers at once,
// and only its newest pending version is ever written.
type Manager struct {
	d       deps.Core
	api     deps.PodAPI
	watched Watched
	cfg     Config
	log     *slog.Logger
	wake    deps.Signal

	mu       sync.Mutex
	pods     map[types.UID]*entry
	queue    []types.UID
	queued   map[types.UID]bool
	inflight map[types.UID]bool
}

// entry is what the manager knows of one pod.
type entry struct {
	pod    *corev1.Pod
	status corev1.PodStatus
	// version counts the accepted status changes.
	version uint64
	// written is the API object (the pod, or a static pod's mirror) as
	// the last successful write returned it, identity and status only;
	// nil before one.
	written *corev1.Pod
	// deletable: the agent said the pod may be deleted from the API.
	deletable bool
	// done: nothing more to write (the pod was deleted, or is gone).
	done bool
	// failures in a row, and the earliest time of the next attempt.
	failures  int
	notBefore time.Time
	retry     deps.Timer
	// unsure: the last attempt failed, maybe after its patch applied (a
	// timeout, a lost reply); the next one reads the pod first.
	unsure bool
	// stopped: the agent said none of the pod's containers runs any more
	// (ContainersStopped); until then a terminal phase is withheld from
	// the API.
	stopped bool
}

// NewManager returns a manager writing through pods and comparing with
// watched; Start runs it.
func NewManager(d deps.Core, pods deps.PodAPI, watched Watched, cfg Config) *Manager {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		d:        d,
		api:      pods,
		watched:  watched,
		cfg:      cfg.withDefaults(),
		log:      log.With("component", "status"),
		wake:     d.Tasks.NewSignal("status-writes"),
		pods:     map[types.UID]*entry{},
		queued:   map[types.UID]bool{},
		inflight: map[types.UID]bool{},
	}
}

// Start spawns the writer and resync tasks; they end when ctx does.
func (m *Manager) Start(ctx context.Context) {
	for i := range m.cfg.Writers {
		m.d.Tasks.Go(fmt.Sprintf("status-writer-%d", i), func() { m.runWriter(ctx) })
	}
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
	if changed && writeAtOnce() {
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
	// The conditions others own (readiness gates, DisruptionTarget) are
	// as the API copy holds them, not as the agent last saw them.
	p.Status.Conditions = mergeConditions(s.Conditions, pod.Status.Conditions)
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
	if e := m.pods[pod.UID]; e != nil {
		e.stopped = true
	}
	m.mu.Unlock()
	if changed {
		m.wake.Notify()
	}
}

// ContainersStopped records that none of the pod's containers runs any
// more and none will (its termination stopped them all): from now on a
// terminal phase the pod's status carries is written. Until then the
// API keeps the phase, reason and message it holds, as the kubelet's
// status manager delays a pod's move to Succeeded or Failed while its
// pod worker could still have running containers (mergePodStatus): a
// Job-like pod whose sidecars stop after its app is shown terminal only
// once they have stopped.
func (m *Manager) ContainersStopped(uid types.UID) {
	m.mu.Lock()
	e := m.pods[uid]
	if e == nil {
		e = &entry{}
		m.pods[uid] = e
	}
	changed := !e.stopped && e.version > 0
	e.stopped = true
	if changed {
		m.enqueueLocked(uid)
	}
	m.mu.Unlock()
	if changed {
		m.wake.Notify()
	}
}

// SetPodDeletable records that the pod is deleted (its DeletionTimestamp is
// set), all its containers are stopped and its sandbox is gone: the manager
// writes the pod's last status, then deletes the pod object with grace 0
// and a UID precondition, once. A pod already gone counts as deleted.
// Static pods and mirror pods are never deleted this way. The pod must
// have a cached status (SetPodStatus or TerminatePod first).
func (m *Manager) SetPodDeletable(uid types.UID) {
	m.mu.Lock()
	e := m.pods[uid]
	if e == nil || e.version == 0 {
		m.mu.Unlock()
		m.log.Warn("pod marked deletable has no status; not deleting", "uid", uid)
		return
	}
	if e.deletable || e.done {
		m.mu.Unlock()
		return
	}
	e.deletable = true
	e.stopped = true // deletable: its containers are stopped
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

// pop takes the oldest queued pod no writer is writing and marks it in
// flight; a pod in flight stays queued for the writer that has it, which
// takes it again when it is done.
func (m *Manager) pop() (types.UID, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := 0; i < len(m.queue); {
		uid := m.queue[i]
		if m.queued[uid] && m.inflight[uid] {
			i++
			continue
		}
		if i == 0 {
			m.queue[0] = ""
			m.queue = m.queue[1:]
		} else {
			m.queue = slices.Delete(m.queue, i, i+1)
		}
		if m.queued[uid] {
			delete(m.queued, uid)
			m.inflight[uid] = true
			return uid, true
		}
	}
	if len(m.queue) == 0 {
		m.queue = nil
	}
	return "", false
}

// finish ends a writer's turn on uid.
func (m *Manager) finish(uid types.UID) {
	m.mu.Lock()
	delete(m.inflight, uid)
	m.mu.Unlock()
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
		m.writePod(ctx, uid)
		m.finish(uid)
		if m.d.Fault(deps.FaultStatusRewrite) {
			m.enqueue(uid)
		}
	}
}

// runResync queues every pod, in UID order, each ResyncPeriod: each is
// compared with the API's copy and written only when they differ.
func (m *Manager) runResync(ctx context.Context) {
	tk := m.d.Tasks.NewTicker("status-resync", m.cfg.ResyncPeriod)
	defer tk.Stop()
	for tk.Wait(ctx) == nil {
		m.mu.Lock()
		uids := make([]types.UID, 0, len(m.pods))
		for uid, e := range m.pods {
			if !e.done && e.version > 0 {
				uids = append(uids, uid)
			}
		}
		slices.Sort(uids)
		if m.d.Fault(deps.FaultStatusResyncReversed) {
			slices.Reverse(uids)
		}
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
	written   *corev1.Pod
	deletable bool
	unsure    bool
	stopped   bool
}

// errSuperseded means the static pod this status belongs to is no longer
// the one its source wants (its manifest was edited or removed): the
// mirror pod of its name shows only the desired version's status, as the
// kubelet's status manager skips a static pod whose mirror translates to
// another pod.
var errSuperseded = errors.New("static pod is no longer desired")

// errGone means the pod this status belongs to no longer exists in the API.
var errGone = errors.New("pod is gone from the API")

// writePod writes the newest status of one pod if the API's differs, then
// deletes the pod if it is deletable.
func (m *Manager) writePod(ctx context.Context, uid types.UID) {
	m.mu.Lock()
	e := m.pods[uid]
	if e == nil || e.done || e.version == 0 || m.d.Clock.Now().Before(e.notBefore) {
		// Gone, finished, no status yet (only ContainersStopped), or
		// backing off: its retry timer queues it again.
		m.mu.Unlock()
		return
	}
	snap := snapshot{pod: e.pod, status: e.status, version: e.version, written: e.written, deletable: e.deletable, unsure: e.unsure, stopped: e.stopped}
	m.mu.Unlock()

	adopted, written, err := m.writeStatus(ctx, snap)
	m.mu.Lock()
	if m.pods[uid] != e {
		m.mu.Unlock()
		return // removed meanwhile
	}
	if written != nil {
		e.written = statusOnly(written)
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
		e.failures, e.notBefore, e.unsure = 0, time.Time{}, false
		if e.retry != nil {
			e.retry.Stop()
		}
		if deleted {
			e.done = true
			m.log.Info("pod deleted", "pod", podKey(snap.pod), "uid", uid)
		}
	case errors.Is(err, errSuperseded):
		// Not written, and not retried: a newer status of this pod (its
		// manifest written back unchanged) is queued by its own change.
		e.failures, e.notBefore, e.unsure = 0, time.Time{}, false
		m.log.Debug("static pod no longer desired; status not written", "pod", podKey(snap.pod), "uid", uid)
	case errors.Is(err, errGone):
		e.done = true
		m.log.Info("pod gone from the API; status no longer written", "pod", podKey(snap.pod), "uid", uid)
	default:
		e.failures, e.unsure = e.failures+1, true
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

// writeStatus patches snap's status over the API's copy of the pod unless
// it already holds it, and returns the pod as written (nil when nothing
// was written). When the API holds a terminal phase the status does not
// have, the status is first made terminal with that phase (Terminate) and
// returned as adopted.
func (m *Manager) writeStatus(ctx context.Context, snap snapshot) (adopted *corev1.PodStatus, written *corev1.Pod, err error) {
	pod := snap.pod
	api, err := m.apiPod(pod, snap.written)
	if err != nil {
		return nil, nil, err
	}
	if snap.unsure {
		// The last write may have applied though it failed: the watch's
		// copy may be older than the API's, and a patch against it would
		// leave that write's fields in place (a pod still Ready). Read the
		// pod, as the kubelet does before every write.
		if api, err = m.readPod(ctx, pod, api); err != nil {
			return nil, nil, err
		}
		written = api
	}
	want := snap.status
	if podutil.IsTerminal(api.Status.Phase) && want.Phase != api.Status.Phase {
		m.log.Warn("API holds a terminal phase; keeping it", "pod", podKey(pod),
			"api", api.Status.Phase, "ours", want.Phase)
		base := *want.DeepCopy()
		base.Phase = api.Status.Phase
		want = Terminate(pod, base, m.d.Clock.Now())
		normalize(&want)
		adopted = &want
	}
	if !snap.stopped && !brokenShowsTerminalEarly && !podutil.IsTerminal(api.Status.Phase) && podutil.IsTerminal(want.Phase) {
		want = withholdTerminal(want, api.Status)
	}
	current := api.Status.DeepCopy()
	normalize(current)
	merged := merge(want, *current)
	if equality.Semantic.DeepEqual(current, &merged) {
		return adopted, written, nil
	}
	patch, unchanged, err := Patch(api.UID, *current, merged)
	if err != nil || unchanged {
		return adopted, written, err
	}
	rctx, cancel := m.d.Clock.WithTimeout(ctx, m.cfg.RequestTimeout)
	out, err := m.api.PatchPodStatus(rctx, api.Namespace, api.Name, patch)
	cancel()
	if err == nil && m.d.Fault(deps.FaultStatusWriteReplyLost) {
		out, err = nil, deps.FaultStatusWriteReplyLost.Err()
	}
	static := podutil.IsStaticPod(pod)
	switch {
	case err == nil:
		return adopted, out, nil
	case (apierrors.IsNotFound(err) || apierrors.IsConflict(err)) && !static:
		// Deleted, or replaced by a pod of the same name (the UID
		// precondition failed).
		return nil, nil, errGone
	default:
		return nil, nil, fmt.Errorf("patch status of pod %s (uid %s): %w", podKey(pod), api.UID, err)
	}
}

// withholdTerminal is want with the phase, reason and message the API
// holds (api): what is written of a terminal status while the pod's
// containers may still run.
func withholdTerminal(want, api corev1.PodStatus) corev1.PodStatus {
	out := *want.DeepCopy()
	out.Phase, out.Reason, out.Message = api.Phase, api.Reason, api.Message
	return out
}

// readPod reads the API object pod's status lives in (api, as the watch or
// the last write showed it) from the apiserver.
func (m *Manager) readPod(ctx context.Context, pod, api *corev1.Pod) (*corev1.Pod, error) {
	rctx, cancel := m.d.Clock.WithTimeout(ctx, m.cfg.RequestTimeout)
	fresh, err := m.api.GetPod(rctx, api.Namespace, api.Name)
	cancel()
	switch {
	case apierrors.IsNotFound(err) && !podutil.IsStaticPod(pod):
		return nil, errGone
	case err != nil:
		return nil, fmt.Errorf("read pod %s (uid %s) after a write of unknown outcome: %w", podKey(pod), api.UID, err)
	case fresh.UID != api.UID && !podutil.IsStaticPod(pod):
		return nil, errGone // replaced by a pod of the same name
	case fresh.UID != api.UID:
		return nil, fmt.Errorf("mirror pod %s was replaced (uid %s, was %s)", podKey(fresh), fresh.UID, api.UID)
	}
	return fresh, nil
}

// apiPod returns what the API holds of the object pod's status lives in —
// the pod itself (same UID) or, for a static pod, its mirror pod — as the
// watch last delivered it, or as written, the pod the last write returned,
// when that is newer.
func (m *Manager) apiPod(pod, written *corev1.Pod) (*corev1.Pod, error) {
	if !podutil.IsStaticPod(pod) {
		watched, ok := m.watched.APIPod(pod.UID)
		if !ok {
			return nil, errGone
		}
		return newer(watched, written), nil
	}
	if _, desired := m.watched.Pod(pod.UID); !desired && !brokenWritesSupersededStatic {
		return nil, errSuperseded
	}
	mirror, ok := m.watched.MirrorPod(pod.Namespace, pod.Name)
	if !ok {
		return nil, fmt.Errorf("mirror pod of static pod %s not seen yet", podKey(pod))
	}
	want := pod.Annotations[podutil.AnnotationConfigHash]
	if want == "" {
		want = string(pod.UID)
	}
	if got, ok := mirror.Annotations[podutil.AnnotationConfigMirror]; !ok || got != want {
		return nil, fmt.Errorf("pod %s in the API is not the mirror of static pod %s", podKey(mirror), pod.UID)
	}
	return newer(mirror, written), nil
}

// statusOnly keeps of a written pod what the next comparison needs: its
// identity, resource version and status (not a second copy of its spec).
func statusOnly(p *corev1.Pod) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion},
		Status:     p.Status,
	}
}

// newer returns written when it is the same object as watched (same UID)
// at a later resource version, else watched. Resource versions compare as
// the numbers etcd makes them; one that is not a number never wins.
func newer(watched, written *corev1.Pod) *corev1.Pod {
	if written == nil || written.UID != watched.UID {
		return watched
	}
	a, errA := strconv.ParseUint(written.ResourceVersion, 10, 64)
	b, errB := strconv.ParseUint(watched.ResourceVersion, 10, 64)
	if errA == nil && errB == nil && a > b {
		return written
	}
	return watched
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
	if err == nil && m.d.Fault(deps.FaultDeleteReplyLost) {
		err = deps.FaultDeleteReplyLost.Err()
	}
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
	out.Conditions = mergeConditions(ours.Conditions, api.Conditions)
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

// mergeConditions are the conditions others own as api holds them (plus
// a DisruptionTarget the agent added that api lacks yet), then the
// agent's own from ours.
func mergeConditions(ours, api []corev1.PodCondition) []corev1.PodCondition {
	var conds []corev1.PodCondition
	for _, c := range api {
		if !IsKubeletCondition(c.Type) {
			conds = append(conds, c)
		}
	}
	for _, c := range ours {
		if c.Type == corev1.DisruptionTarget && !hasCondition(api, c.Type) {
			conds = append(conds, c)
		}
	}
	for _, c := range ours {
		if IsKubeletCondition(c.Type) {
			conds = append(conds, c)
		}
	}
	return conds
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

// ObserveGeneration records that the agent now syncs pod at its current
// generation (a graceful delete bumps it): the cached status and the
// agent's own conditions report it as observed, and the change is written,
// as upstream's status manager stamps the generation of the pod it is
// given on every status. Nothing happens for a pod without a cached
// status, one whose status is terminal, or one already at that generation.
func (m *Manager) ObserveGeneration(pod *corev1.Pod) {
	m.mu.Lock()
	e := m.pods[pod.UID]
	if e == nil || e.version == 0 || e.done || podutil.IsTerminal(e.status.Phase) || e.status.ObservedGeneration >= pod.Generation {
		m.mu.Unlock()
		return
	}
	changed := m.setLocked(pod, Observed(e.status, pod.Generation))
	m.mu.Unlock()
	if changed {
		m.wake.Notify()
	}
}

// Observed returns s observing generation: the status's observedGeneration
// and that of the agent's own conditions (the resize conditions keep
// theirs), never lowered.
func Observed(s corev1.PodStatus, generation int64) corev1.PodStatus {
	out := *s.DeepCopy()
	out.ObservedGeneration = max(out.ObservedGeneration, generation)
	for i := range out.Conditions {
		c := &out.Conditions[i]
		if IsKubeletCondition(c.Type) && !isResizeCondition(c.Type) {
			c.ObservedGeneration = max(c.ObservedGeneration, generation)
		}
	}
	return out
}
