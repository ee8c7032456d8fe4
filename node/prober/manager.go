package prober

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Observer receives each probe run (metrics.Metrics implements it).
type Observer interface {
	// ObserveProbe counts one probe run of probeType ("Liveness", …) with
	// result "successful", "failed" or "unknown" and its duration.
	ObserveProbe(probeType, result string, pod *corev1.Pod, container string, d time.Duration)
}

// Config is what a Manager works with.
type Config struct {
	Tasks deps.Tasks
	Clock deps.Clock
	Rand  deps.Rand
	// Runner runs one probe.
	Runner *Runner
	// View returns the runtime's view of a pod (the PLEG cache).
	View func(uid types.UID) (*podstate.PodStatus, bool)
	// Changed is told of every change of a container instance's verdict.
	Changed func(uid types.UID, t Type, r Result)
	// Event records an event on a pod's container.
	Event func(pod *corev1.Pod, container, eventType, reason, message string)
	// Observer receives every probe run (nil: none).
	Observer Observer
	// Log receives verdict changes (nil: none).
	Log *slog.Logger
	// HostIP is the default probe host of host-network pods (their
	// sandboxes have no IP of their own).
	HostIP string
}

// key names one worker.
type key struct {
	uid       types.UID
	container string
	typ       Type
}

// resultKey names one verdict.
type resultKey struct {
	id  string
	typ Type
}

// task is a running worker.
type task struct {
	w      *Worker
	pod    *corev1.Pod
	c      *corev1.Container
	probe  *corev1.Probe
	cancel context.CancelFunc

	mu      sync.Mutex
	trigger context.CancelFunc // ends the current wait early
}

// Manager runs the probe workers of the node's pods and keeps their
// verdicts per container instance.
type Manager struct {
	cfg   Config
	start time.Time

	mu          sync.Mutex
	ctx         context.Context
	workers     map[key]*task
	results     map[resultKey]Result
	terminating map[types.UID]bool
	found       map[types.UID]found
	// notYetReady: instances without a readiness probe whose startup
	// probe just passed; the next status shows them started but not
	// ready, once.
	notYetReady map[string]bool
}

// found is what the API said of a pod when this manager first saw it:
// the status an earlier agent wrote. A container instance that ran before
// this agent started keeps it until its own probes say otherwise.
type found struct {
	// ready: the pod's Ready condition was True.
	ready bool
	// started lists, by container name, the instance the status named
	// and whether it was started.
	started map[string]foundContainer
}

// foundContainer is one container's entry in a found status.
type foundContainer struct {
	id      string
	started bool
}

// foundOf reads pod's API status.
func foundOf(pod *corev1.Pod) found {
	f := found{started: map[string]foundContainer{}}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			f.ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			id := cs.ContainerID
			if i := strings.Index(id, "://"); i >= 0 {
				id = id[i+3:]
			}
			f.started[cs.Name] = foundContainer{id: id, started: cs.Started != nil && *cs.Started}
		}
	}
	return f
}

// foundStarted: the status the manager found named instance id of
// container name as started.
func (m *Manager) foundStarted(uid types.UID, name, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.found[uid].started[name]
	return ok && id != "" && c.id == id && c.started
}

// foundReady: the status the manager found named instance id of
// container name, in a Ready pod.
func (m *Manager) foundReady(uid types.UID, name, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.found[uid]
	c, ok := f.started[name]
	return ok && id != "" && c.id == id && f.ready
}

// beforeAgent: an instance that started at startedAt ran before this
// manager started.
func (m *Manager) beforeAgent(startedAt time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !startedAt.IsZero() && !m.start.IsZero() && startedAt.Before(m.start.Add(-RestartGrace))
}

// NewManager returns a manager; Start gives it its context.
func NewManager(cfg Config) *Manager {
	return &Manager{cfg: cfg, workers: map[key]*task{}, results: map[resultKey]Result{}, terminating: map[types.UID]bool{}, found: map[types.UID]found{}, notYetReady: map[string]bool{}}
}

// Start records when the agent started (a worker that starts within one
// period of it waits a random part of its period first, so a restarted
// agent does not probe every container at once); workers end with ctx.
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ctx, m.start = ctx, m.cfg.Clock.Now()
}

// Workers is the number of running workers.
func (m *Manager) Workers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.workers)
}

// AddPod starts the workers of pod's probes that are not running yet
// (regular containers and sidecars). The first time it sees a pod it
// keeps the pod's API status: what an earlier agent found.
func (m *Manager) AddPod(pod *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil || m.terminating[pod.UID] {
		return
	}
	if _, ok := m.found[pod.UID]; !ok {
		m.found[pod.UID] = foundOf(pod)
	}
	for _, c := range probedContainers(pod) {
		for _, t := range Types {
			p := Of(c, t)
			k := key{pod.UID, c.Name, t}
			if p == nil || m.workers[k] != nil {
				continue
			}
			ctx, cancel := m.cfg.Tasks.WithCancel(m.ctx)
			tk := &task{w: NewWorker(t, SpecOf(p, t)), pod: pod, c: c, probe: p, cancel: cancel}
			m.workers[k] = tk
			m.cfg.Tasks.Go(fmt.Sprintf("probe %s %s/%s %s", t, pod.Namespace, pod.Name, c.Name), func() { m.run(ctx, k, tk) })
		}
	}
}

// probedContainers are the containers probes apply to: the regular
// containers and the sidecars (restartable init containers).
func probedContainers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if podutil.IsSidecar(c) {
			out = append(out, c)
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// Terminating marks the pod as being stopped: its workers record their
// terminating verdicts (liveness and startup success, readiness failure)
// now and probe no more.
func (m *Manager) Terminating(uid types.UID) {
	m.mu.Lock()
	m.terminating[uid] = true
	var tasks []*task
	for _, k := range m.sortedKeysLocked(uid) {
		tasks = append(tasks, m.workers[k])
	}
	m.mu.Unlock()
	for _, tk := range tasks {
		tk.wake()
	}
}

// RemovePod stops the pod's workers and forgets its verdicts.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.sortedKeysLocked(uid) {
		tk := m.workers[k]
		delete(m.workers, k)
		tk.cancel()
		m.forgetLocked(tk.w.id)
	}
	delete(m.terminating, uid)
	delete(m.found, uid)
}

func (m *Manager) sortedKeysLocked(uid types.UID) []key {
	var out []key
	for k := range m.workers {
		if k.uid == uid {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b key) int {
		if a.container != b.container {
			if a.container < b.container {
				return -1
			}
			return 1
		}
		return int(a.typ) - int(b.typ)
	})
	return out
}

func (m *Manager) forgetLocked(id string) {
	if id == "" {
		return
	}
	for _, t := range Types {
		delete(m.results, resultKey{id, t})
	}
	delete(m.notYetReady, id)
}

// result returns the verdict of type t for instance id.
func (m *Manager) result(id string, t Type) (Result, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[resultKey{id, t}]
	return r, ok
}

// set records a verdict and reports a change.
func (m *Manager) set(k key, id string, r Result, why string) {
	m.mu.Lock()
	old, ok := m.results[resultKey{id, k.typ}]
	m.results[resultKey{id, k.typ}] = r
	if tk := m.workers[k]; k.typ == Startup && r == Success && (!ok || old != r) && tk != nil && tk.c.ReadinessProbe == nil {
		m.notYetReady[id] = true
	}
	m.mu.Unlock()
	if ok && old == r {
		return
	}
	if m.cfg.Log != nil {
		m.cfg.Log.Info("probe verdict", "uid", string(k.uid), "container", k.container, "id", id,
			"probe", k.typ.String(), "result", r.String(), "why", why)
	}
	if m.cfg.Changed != nil {
		m.cfg.Changed(k.uid, k.typ, r)
	}
}

// wake ends the task's current wait so that it looks at once.
func (tk *task) wake() {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if tk.trigger != nil {
		tk.trigger()
	}
}

// run is a worker's task: look, maybe probe, wait for the next tick or a
// wake-up, until the worker stops or the pod is removed.
func (m *Manager) run(ctx context.Context, k key, tk *task) {
	defer finish(tk)
	period := tk.w.Spec.Period
	if m.cfg.Clock.Since(m.start) < period {
		if m.cfg.Tasks.Sleep(ctx, time.Duration(m.cfg.Rand.IntN(int(period)))) != nil {
			return
		}
	}
	ticker := m.cfg.Tasks.NewTicker(fmt.Sprintf("probe tick %s %s", k.container, k.typ), period)
	defer ticker.Stop()
	for {
		if !m.step(ctx, k, tk) {
			return
		}
		wctx, cancel := m.cfg.Tasks.WithCancel(ctx)
		tk.mu.Lock()
		tk.trigger = cancel
		tk.mu.Unlock()
		_ = ticker.Wait(wctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
	}
}

// finish ends a worker's task. A worker that stopped by itself (its
// container exited for good) stays registered, so AddPod does not start
// it again; RemovePod forgets it.
func finish(tk *task) { tk.cancel() }

// step is one wake-up of a worker; false stops it.
func (m *Manager) step(ctx context.Context, k key, tk *task) bool {
	v, podIP := m.view(k, tk)
	st := tk.w.Observe(v)
	m.apply(k, st, fmt.Sprintf("running=%v started=%v terminating=%v", v.Running, v.Started, v.Terminating))
	if st.Stop {
		return false
	}
	if !st.Probe {
		return true
	}
	began := m.cfg.Clock.Now()
	out, err := m.cfg.Runner.Run(ctx, tk.probe, tk.w.Spec.Timeout, Target{Pod: tk.pod, Container: tk.c, ContainerID: v.ID, PodIP: podIP})
	if ctx.Err() != nil {
		return false
	}
	m.report(tk, out, err, m.cfg.Clock.Since(began))
	if err != nil {
		out.Result = Unknown
	}
	m.apply(k, tk.w.Record(out.Result), "probe: "+out.Output)
	return true
}

func (m *Manager) apply(k key, st Step, why string) {
	if st.Forget != "" {
		m.mu.Lock()
		delete(m.results, resultKey{st.Forget, k.typ})
		delete(m.notYetReady, st.Forget)
		m.mu.Unlock()
	}
	if st.Set {
		m.set(k, st.ID, st.Result, why)
	}
}

// report records metrics and the events of a probe run: Unhealthy for a
// failure or an error, ProbeWarning for a success with a warning.
func (m *Manager) report(tk *task, out Outcome, err error, d time.Duration) {
	t := tk.w.Type
	res := "successful"
	switch {
	case err != nil:
		res = "unknown"
	case out.Result == Failure:
		res = "failed"
	}
	if m.cfg.Observer != nil {
		m.cfg.Observer.ObserveProbe(t.String(), res, tk.pod, tk.c.Name, d)
	}
	if m.cfg.Event == nil {
		return
	}
	switch {
	case err != nil:
		m.cfg.Event(tk.pod, tk.c.Name, corev1.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe errored and resulted in unknown state: %v", t, err))
	case out.Result == Failure:
		m.cfg.Event(tk.pod, tk.c.Name, corev1.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe failed: %s", t, out.Output))
	case out.Warning:
		m.cfg.Event(tk.pod, tk.c.Name, corev1.EventTypeWarning, "ProbeWarning", fmt.Sprintf("%s probe warning: %s", t, out.Output))
	}
}

// view builds what a worker sees from the runtime's view of its pod.
func (m *Manager) view(k key, tk *task) (View, string) {
	m.mu.Lock()
	v := View{Now: m.cfg.Clock.Now(), Terminating: m.terminating[k.uid]}
	m.mu.Unlock()
	// A sidecar always runs again; another container as its own restart
	// policy and rules, else the pod's, allow (podutil).
	v.RestartNever = !podutil.IsSidecar(tk.c) && !podutil.MayRestart(tk.pod, tk.c)
	st, ok := m.cfg.View(k.uid)
	if !ok || st == nil {
		return v, ""
	}
	podIP := ""
	if sb, ok := st.LatestSandbox(); ok {
		podIP = sb.IP
	}
	if podIP == "" && tk.pod.Spec.HostNetwork {
		podIP = m.cfg.HostIP
	}
	c, ok := st.Latest(k.container)
	if !ok || c.State == podstate.ContainerCreated {
		return v, podIP
	}
	v.ID, v.StartedAt = c.ID, c.StartedAt
	v.Running = c.State == podstate.ContainerRunning
	v.Exited = c.State == podstate.ContainerExited
	v.BeforeAgent = v.Running && m.beforeAgent(c.StartedAt)
	v.Started = m.started(k.uid, tk.c, c.ID)
	return v, podIP
}

// started: the instance's startup probe succeeded, or it has none. With
// no verdict yet (an instance that ran before the agent started) the
// status the agent found says.
func (m *Manager) started(uid types.UID, c *corev1.Container, id string) bool {
	if c.StartupProbe == nil {
		return true
	}
	if r, ok := m.result(id, Startup); ok {
		return r == Success
	}
	return m.foundStarted(uid, c.Name, id)
}

// ForPod returns the verdicts of pod's containers as status generation
// reads them. A running instance no readiness worker has seen yet is not
// ready, and its worker is woken to probe it at once; one that ran before
// the agent started keeps the readiness of the status the agent found
// until its probe gives a verdict.
func (m *Manager) ForPod(pod *corev1.Pod, st *podstate.PodStatus) *PodResults {
	names := map[string]*corev1.Container{}
	for _, c := range probedContainers(pod) {
		names[c.Name] = c
	}
	ids := map[string]*corev1.Container{}
	before := map[string]bool{}
	if st != nil {
		for _, c := range st.Containers {
			if spec := names[c.Name]; spec != nil {
				ids[c.ID] = spec
				before[c.ID] = c.State == podstate.ContainerRunning && m.beforeAgent(c.StartedAt)
			}
		}
	}
	return &PodResults{m: m, uid: pod.UID, ids: ids, before: before}
}

// PodResults answers status generation's questions about one pod.
type PodResults struct {
	m   *Manager
	uid types.UID
	ids map[string]*corev1.Container
	// before: the instance ran before the agent started.
	before map[string]bool
}

// Ready reports whether instance id's readiness verdict is success (true
// for a container without a readiness probe).
func (p *PodResults) Ready(id string) bool {
	c := p.ids[id]
	if c == nil {
		return true
	}
	if c.ReadinessProbe == nil {
		return !p.m.takeNotYetReady(p.uid, id)
	}
	r, ok := p.m.result(id, Readiness)
	if ok && r == Success {
		return true
	}
	// Asked about a started instance that is not ready (no verdict yet,
	// or its initial or last one a failure), the readiness worker probes
	// at once rather than at its next tick, as the kubelet's
	// UpdatePodStatus triggers it: an instance whose startup probe just
	// passed is ready without waiting a readiness period.
	p.m.mu.Lock()
	tk := p.m.workers[key{p.uid, c.Name, Readiness}]
	p.m.mu.Unlock()
	if tk != nil && !readinessWaitsForTick {
		tk.wake()
	}
	if ok {
		return false
	}
	return p.before[id] && p.m.foundReady(p.uid, c.Name, id)
}

// takeNotYetReady: instance id's startup probe just passed and it has no
// readiness probe. As the kubelet records a startup result in the status
// (SetContainerStartup) before the sync that computes readiness, the
// first status after it shows the instance started but not ready; the
// pod is woken for the next, which shows it ready.
func (m *Manager) takeNotYetReady(uid types.UID, id string) bool {
	m.mu.Lock()
	owed := m.notYetReady[id]
	delete(m.notYetReady, id)
	m.mu.Unlock()
	if owed && m.cfg.Changed != nil {
		m.cfg.Changed(uid, Readiness, Success)
	}
	return owed
}

// Started reports whether instance id's startup probe succeeded (true for
// a container without one).
func (p *PodResults) Started(id string) bool {
	c := p.ids[id]
	if c == nil {
		return true
	}
	return p.m.started(p.uid, c, id)
}

// Failed is the runtime sync's question: did instance id fail its
// liveness or startup probe? It returns the event message of the kill and
// the probe's own grace period, if it sets one.
func (m *Manager) Failed(pod *corev1.Pod, id string) (name string, t Type, grace *int64, failed bool) {
	for _, c := range probedContainers(pod) {
		for _, t := range [...]Type{Liveness, Startup} {
			p := Of(c, t)
			if p == nil {
				continue
			}
			if r, ok := m.result(id, t); ok && r == Failure {
				return c.Name, t, p.TerminationGracePeriodSeconds, true
			}
		}
	}
	return "", 0, nil, false
}
