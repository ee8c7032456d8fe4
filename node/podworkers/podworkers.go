// Package podworkers runs one serialized worker per pod UID. A worker's
// state only moves forward — syncing → terminating → terminated — and each
// step is delegated to a Syncer. A newer pending update replaces one not yet
// processed; kill requests accumulate and the grace period only shrinks: a
// shorter one cancels the kill in flight, which is redone at once with it.
// Static pods are serialised by full name (namespace/name): a new version
// starts only after every earlier one has fully terminated.
// After each step the pod is requeued in a WorkQueue with a jittered delay
// that the SyncLoop's tick turns back into updates.
package podworkers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// State is where a pod worker is in its forward-only life.
type State int

// The worker states.
const (
	Syncing State = iota
	Terminating
	Terminated
)

func (s State) String() string {
	return [...]string{"syncing", "terminating", "terminated"}[s]
}

// UpdateType says what an update asks of a worker.
type UpdateType int

// The update types.
const (
	// Create: the pod appeared in its source. It restarts a worker whose
	// pod had fully terminated (a static pod removed and added back).
	Create UpdateType = iota
	// Update: the pod's spec or metadata changed.
	Update
	// Sync: resync (requeue due, PLEG event, probe result). It wakes a
	// worker, never starts one: a pod reaches the workers through its
	// source's Create, once admission has decided on it.
	Sync
	// Kill: terminate the pod (deleted, evicted, removed from its source,
	// or an orphan found in the runtime).
	Kill
)

// Work is one update for a pod's worker.
type Work struct {
	Type UpdateType
	UID  types.UID
	// Pod is the newest pod object; nil is allowed for Kill of an orphan.
	Pod *corev1.Pod
	// GracePeriod overrides the pod's grace period for Kill (seconds).
	GracePeriod *int64
	// Reason explains a Kill in logs and events.
	Reason string
}

// SyncResult is what a sync step reports.
type SyncResult struct {
	// Terminal: the pod reached Succeeded or Failed; the worker moves on to
	// terminating it.
	Terminal bool
	// RequeueAfter asks for the next sync no later than this (0: the
	// default resync interval); used to wake up when a back-off expires.
	RequeueAfter time.Duration
}

// Syncer performs the steps of a pod's life.
type Syncer interface {
	// SyncPod brings the runtime and the pod's status in line with its
	// spec. lastSync is when the worker's previous step ended: the syncer
	// must not act on runtime state older than that.
	SyncPod(ctx context.Context, pod *corev1.Pod, lastSync time.Time) (SyncResult, error)
	// SyncTerminatingPod stops the pod's containers within gracePeriod.
	SyncTerminatingPod(ctx context.Context, uid types.UID, pod *corev1.Pod, gracePeriod int64, lastSync time.Time) error
	// SyncTerminatedPod finishes a pod whose containers are all stopped.
	SyncTerminatedPod(ctx context.Context, uid types.UID, pod *corev1.Pod) error
}

// Config tunes the requeue delays.
type Config struct {
	// ResyncInterval is the delay after a successful sync (jittered by up
	// to 50 %). Default 1 min.
	ResyncInterval time.Duration
	// BackoffPeriod is the delay after a failed step (jittered by up to
	// 50 %). Default 10 s.
	BackoffPeriod time.Duration
	// Observer, when set, is told about every step a worker runs (for
	// metrics); nil observes nothing. It must not block.
	Observer Observer
}

// Operation names a worker step the way the kubelet labels
// kubelet_pod_worker_duration_seconds (operation_type).
type Operation string

// The operations. A sync step is OpCreate, OpUpdate or OpSync after the
// strongest kind of work that was pending when it began (Create before
// Update before Sync): the first sync of a pod is OpCreate.
const (
	OpCreate     Operation = "create"
	OpUpdate     Operation = "update"
	OpSync       Operation = "sync"
	OpKill       Operation = "kill"       // a terminating step
	OpTerminated Operation = "terminated" // a terminated step
)

// Observer watches worker steps. ObservePodWorker is called from the
// worker's task after each step, with the pod the step was for and the
// step's duration on the clock (the Syncer call only, not the time the
// work waited). ForgetPodWorker is called when Forget drops a worker,
// after its last step was observed.
type Observer interface {
	ObservePodWorker(pod PodRef, op Operation, duration time.Duration)
	ForgetPodWorker(uid types.UID)
}

// PodRef names the pod of a worker step: its UID always, its namespace
// and name when the worker knows its pod.
type PodRef struct {
	UID             types.UID
	Namespace, Name string
}

// refOf names w's pod as the step that ran with pod saw it.
func refOf(uid types.UID, pod *corev1.Pod) PodRef {
	r := PodRef{UID: uid}
	if pod != nil {
		r.Namespace, r.Name = pod.Namespace, pod.Name
	}
	return r
}

// PodWorkers owns the workers.
type PodWorkers struct {
	d      deps.Core
	syncer Syncer
	queue  *WorkQueue
	cfg    Config
	ctx    context.Context

	mu      sync.Mutex
	workers map[types.UID]*worker
	// static holds, per static pod full name (namespace/name), the UIDs
	// of its workers in the order they were created: a static pod starts
	// only once every earlier one has finished.
	static map[string][]types.UID
}

type worker struct {
	uid     types.UID
	name    string
	pod     *corev1.Pod
	state   State
	hasWork bool
	// grace is the accumulated kill grace period (only shrinks); every
	// kill step gets all of it, a retried one too (as the kubelet's).
	grace            *int64
	reason           string
	restartRequested bool
	running          bool // the worker task is alive
	wake             deps.Signal
	cancelStep       context.CancelFunc
	lastSync         time.Time
	finished         bool // terminated step done
	// op is the strongest kind of pending sync work, for the Observer
	// (the zero value, Create, is right for a new or reset worker).
	op UpdateType
	// fullName is the pod's namespace/name when it is a static pod ("":
	// not static); mayStart is set once it was allowed to start.
	fullName string
	mayStart bool
}

// New returns pod workers that run steps through syncer; ctx bounds every
// worker task.
func New(ctx context.Context, d deps.Core, syncer Syncer, queue *WorkQueue, cfg Config) *PodWorkers {
	if cfg.ResyncInterval <= 0 {
		cfg.ResyncInterval = time.Minute
	}
	if cfg.BackoffPeriod <= 0 {
		cfg.BackoffPeriod = 10 * time.Second
	}
	return &PodWorkers{d: d, syncer: syncer, queue: queue, cfg: cfg, ctx: ctx,
		workers: map[types.UID]*worker{}, static: map[string][]types.UID{}}
}

// UpdatePod hands work to the pod's worker, creating it if needed (but
// for a Sync, which only wakes a worker that exists).
func (p *PodWorkers) UpdatePod(u Work) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.workers[u.UID]
	if w == nil {
		if u.Type == Sync || (u.Type == Update && u.Pod == nil) {
			// A resync of a pod no worker has: its source's Create (and
			// the admission before it) has not come yet, as after an
			// agent restart when the runtime's view of a pod reaches the
			// PLEG first. The kubelet's PLEG and probes sync only the pods
			// its config loop added and admitted in the same step.
			return
		}
		w = &worker{uid: u.UID, pod: u.Pod, name: workerName(u), wake: p.d.Tasks.NewSignal("pod " + workerName(u))}
		p.workers[u.UID] = w
		if u.Pod != nil && podutil.IsStaticPod(u.Pod) {
			w.fullName = u.Pod.Namespace + "/" + u.Pod.Name
			p.queueStaticLocked(w)
		}
	}
	if u.Pod != nil {
		if w.state == Syncing || u.Type == Create || u.Type == Kill {
			w.pod = u.Pod
		}
	}
	switch u.Type {
	case Create:
		if w.state != Syncing && !regress104648 {
			if w.finished && !w.running {
				p.resetLocked(w, u.Pod)
			} else {
				// Restarted by its own task once finished: a reset
				// under a running task would let that task move the
				// restarted pod on as the old one.
				w.restartRequested = true
				w.pod = u.Pod
			}
		}
	case Update, Sync:
		if w.state != Syncing {
			return // terminating or terminated pods ignore updates
		}
	case Kill:
		if brokenStartsSuperseded && w.state == Syncing && w.fullName != "" && !w.mayStart {
			return // the deliberately broken build (teeth_superseded.go)
		}
		g := killGrace(u, w.pod)
		if regress93210 && w.state == Syncing && w.cancelStep != nil {
			g = 0
		}
		shortened := w.grace != nil && g < *w.grace
		if w.grace == nil || shortened {
			p.setGraceLocked(w, g)
		}
		if u.Reason != "" {
			w.reason = u.Reason
		}
		w.restartRequested = false
		switch {
		case w.state == Syncing:
			w.state = Terminating
			if w.cancelStep != nil {
				// Stop the sync in flight: termination takes over.
				w.cancelStep()
			}
		case w.state == Terminating && shortened && w.cancelStep != nil:
			// Stop the kill in flight: it is redone at once with the
			// shorter grace period.
			w.cancelStep()
		case w.state == Terminated:
			return
		}
	}
	if u.Type != Kill && (!w.hasWork || u.Type < w.op) {
		w.op = u.Type
	}
	w.hasWork = true
	p.ensureRunningLocked(w)
	w.wake.Notify()
}

func (p *PodWorkers) resetLocked(w *worker, pod *corev1.Pod) {
	*w = worker{uid: w.uid, name: w.name, pod: pod, wake: w.wake, fullName: w.fullName}
	if w.fullName != "" {
		// Started again: it now comes after any version that started
		// meanwhile.
		p.unqueueStaticLocked(w)
		p.queueStaticLocked(w)
	}
}

// queueStaticLocked puts a static pod's worker last in its full name's
// start order.
func (p *PodWorkers) queueStaticLocked(w *worker) {
	p.static[w.fullName] = append(p.static[w.fullName], w.uid)
}

// unqueueStaticLocked drops a static pod's worker from its full name's
// start order and wakes the workers that may now start.
func (p *PodWorkers) unqueueStaticLocked(w *worker) {
	uids := slices.DeleteFunc(p.static[w.fullName], func(u types.UID) bool { return u == w.uid })
	if len(uids) == 0 {
		delete(p.static, w.fullName)
	} else {
		p.static[w.fullName] = uids
	}
	p.wakeStaticLocked(w.fullName)
}

// wakeStaticLocked wakes the workers of a static pod full name that wait
// for their turn.
func (p *PodWorkers) wakeStaticLocked(fullName string) {
	for _, uid := range p.static[fullName] {
		if o := p.workers[uid]; o != nil && o.hasWork && !o.mayStart {
			o.wake.Notify()
		}
	}
}

// mayStartLocked reports whether w's syncing step may run: always for a
// pod that is not static; for a static pod, once every worker of the same
// full name created before it has finished, so that two versions of a
// static pod (an edited manifest) never run together.
func (p *PodWorkers) mayStartLocked(w *worker) bool {
	if w.fullName == "" || w.mayStart {
		return true
	}
	for _, uid := range p.static[w.fullName] {
		if uid == w.uid {
			break
		}
		if o := p.workers[uid]; o != nil && !o.finished {
			return false
		}
	}
	w.mayStart = true
	return true
}

func workerName(u Work) string {
	if u.Pod != nil {
		return u.Pod.Namespace + "/" + u.Pod.Name
	}
	return string(u.UID)
}

// setGraceLocked sets w's kill grace period to g seconds.
func (p *PodWorkers) setGraceLocked(w *worker, g int64) {
	w.grace = &g
}

func killGrace(u Work, pod *corev1.Pod) int64 {
	switch {
	case u.GracePeriod != nil:
		return max(*u.GracePeriod, 0)
	case pod != nil:
		return podutil.GracePeriod(pod)
	}
	return podutil.DefaultGracePeriodSeconds
}

func (p *PodWorkers) ensureRunningLocked(w *worker) {
	if w.running {
		return
	}
	w.running = true
	p.d.Tasks.Go("podworker "+w.name, func() { p.run(w) })
}

// run is a worker task: it takes pending work one step at a time.
func (p *PodWorkers) run(w *worker) {
	for {
		p.mu.Lock()
		if w.finished && w.restartRequested {
			// The pod was added back (same UID) while it terminated:
			// it starts again as a new pod.
			p.resetLocked(w, w.pod)
			w.running, w.hasWork = true, true
		}
		if !w.hasWork {
			if w.finished && !w.restartRequested {
				w.running = false
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			if err := w.wake.Wait(p.ctx); err != nil {
				p.mu.Lock()
				w.running = false
				p.mu.Unlock()
				return
			}
			continue
		}
		if w.state == Syncing && !p.mayStartLocked(w) {
			// An earlier version of this static pod has not finished:
			// wait for it, keeping the work.
			p.mu.Unlock()
			if err := w.wake.Wait(p.ctx); err != nil {
				p.mu.Lock()
				w.running = false
				p.mu.Unlock()
				return
			}
			continue
		}
		w.hasWork = false
		state, pod, lastSync, op := w.state, w.pod, w.lastSync, w.op
		w.op = Sync
		var grace int64
		if w.grace != nil {
			grace = *w.grace
		}
		stepCtx, cancel := p.d.Tasks.WithCancel(p.ctx)
		w.cancelStep = cancel
		p.mu.Unlock()

		began := p.d.Clock.Now()
		next, delay := p.step(stepCtx, w, state, pod, grace, lastSync)
		cancel()
		if obs := p.cfg.Observer; obs != nil {
			obs.ObservePodWorker(refOf(w.uid, pod), stepOperation(state, op), p.d.Clock.Since(began))
		}

		p.mu.Lock()
		w.cancelStep = nil
		w.lastSync = p.d.Clock.Now()
		if next > w.state {
			if next == Terminating && w.grace == nil {
				p.setGraceLocked(w, killGrace(Work{}, w.pod))
			}
			w.state = next
			w.hasWork = true // go on to the next state at once
		}
		// Requeue a step that did not move the worker on: the resync of a
		// syncing pod, the retry of a failed terminating or terminated step.
		requeue := w.state == state
		p.mu.Unlock()
		if requeue && delay >= 0 {
			p.queue.Enqueue(w.uid, delay)
		}
	}
}

// step runs one step and returns the state to move to and the requeue
// delay (negative: none).
func (p *PodWorkers) step(ctx context.Context, w *worker, state State, pod *corev1.Pod, grace int64, lastSync time.Time) (State, time.Duration) {
	log := p.d.Log.With("pod", w.name, "uid", string(w.uid))
	switch state {
	case Syncing:
		res, err := p.syncer.SyncPod(ctx, pod, lastSync)
		if err != nil {
			if ctx.Err() != nil {
				return Syncing, -1 // cancelled by a kill: termination follows
			}
			log.Warn("sync failed; will retry", "error", err.Error())
			return Syncing, p.jitter(p.cfg.BackoffPeriod)
		}
		if res.Terminal {
			return Terminating, -1
		}
		delay := p.jitter(p.cfg.ResyncInterval)
		if res.RequeueAfter > 0 && res.RequeueAfter < delay {
			delay = res.RequeueAfter
		}
		if p.d.Fault(deps.FaultSyncErrorAfterWork) {
			// As a sync that failed late: retried after the back-off,
			// never later than it would have been.
			log.Warn("sync failed; will retry", "error", deps.FaultSyncErrorAfterWork.Err().Error())
			return Syncing, min(delay, p.jitter(p.cfg.BackoffPeriod))
		}
		return Syncing, delay
	case Terminating:
		if err := p.syncer.SyncTerminatingPod(ctx, w.uid, pod, grace, lastSync); err != nil {
			if ctx.Err() != nil && p.ctx.Err() == nil {
				// Cancelled by a shorter grace period: the kill that
				// replaces it is pending already.
				log.Info("terminating cut short by a shorter grace period", "grace", grace)
				return Terminating, -1
			}
			log.Warn("terminating failed; will retry", "error", err.Error())
			return Terminating, p.jitter(p.cfg.BackoffPeriod)
		}
		return Terminated, -1
	default:
		if err := p.syncer.SyncTerminatedPod(ctx, w.uid, pod); err != nil {
			log.Warn("finishing a terminated pod failed; will retry", "error", err.Error())
			return Terminated, p.jitter(p.cfg.BackoffPeriod)
		}
		if p.d.Fault(deps.FaultCleanupErrorAfterWork) {
			log.Warn("finishing a terminated pod failed; will retry", "error", deps.FaultCleanupErrorAfterWork.Err().Error())
			return Terminated, p.jitter(p.cfg.BackoffPeriod)
		}
		p.mu.Lock()
		w.finished = true
		if w.fullName != "" {
			p.wakeStaticLocked(w.fullName)
		}
		p.mu.Unlock()
		return Terminated, -1
	}
}

// stepOperation is the Operation of a step run in state after pending
// work of kind op.
func stepOperation(state State, op UpdateType) Operation {
	switch state {
	case Terminating:
		return OpKill
	case Terminated:
		return OpTerminated
	}
	switch op {
	case Create:
		return OpCreate
	case Update:
		return OpUpdate
	}
	return OpSync
}

// Requeue wakes the pod's worker for the work its queue entry stands for:
// the resync of a syncing pod, or the retry of a terminating or terminated
// step that failed. The WorkQueue, drained by the SyncLoop's tick, is the
// one way a pod's worker is woken later.
func (p *PodWorkers) Requeue(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.workers[uid]
	if w == nil || w.finished && !w.restartRequested {
		return
	}
	if !w.hasWork {
		w.op = Sync
	}
	w.hasWork = true
	p.ensureRunningLocked(w)
	w.wake.Notify()
}

func (p *PodWorkers) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d + time.Duration(p.d.Rand.IntN(int(d/2)+1))
}

// State reports the state of a pod's worker.
func (p *PodWorkers) State(uid types.UID) (State, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.workers[uid]
	if w == nil {
		return 0, false
	}
	return w.state, true
}

// IsFinished reports whether the pod's worker has terminated the pod and
// finished its last step.
func (p *PodWorkers) IsFinished(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.workers[uid]
	return w != nil && w.finished
}

// UIDs returns the UIDs with a worker, sorted.
func (p *PodWorkers) UIDs() []types.UID {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]types.UID, 0, len(p.workers))
	for uid := range p.workers {
		out = append(out, uid)
	}
	slices.Sort(out)
	return out
}

// Forget drops a finished worker (its pod is gone from every source).
// It reports an error when the worker has not finished.
func (p *PodWorkers) Forget(uid types.UID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.workers[uid]
	if w == nil {
		return nil
	}
	if !w.finished || w.running {
		return fmt.Errorf("pod worker %s (%s) is still %s", w.name, uid, w.state)
	}
	delete(p.workers, uid)
	if w.fullName != "" {
		p.unqueueStaticLocked(w)
	}
	if obs := p.cfg.Observer; obs != nil {
		obs.ForgetPodWorker(uid)
	}
	return nil
}
