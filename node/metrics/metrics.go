// Package metrics is the agent's Prometheus instrumentation, exposed under
// the kubelet's metric names, types, label names and buckets so that the
// dashboards and alerts written for the kubelet work unchanged.
//
// Everything is registered on the registry New is given: one fresh
// prometheus.NewRegistry() per agent, never the default registry, and no
// package-level state. Durations are measured with the injected clock, so
// in the simulator they are virtual time.
//
// Metrics implements the small observer interfaces the measured packages
// define (pleg.Observer, podworkers.Observer, runtimesync.Observer,
// eviction.Observer, cpumanager.Observer, nodestatus.Observer), so
// those packages never import Prometheus. Every method is safe on a nil
// *Metrics and then does nothing.
//
// The kubelet serves the prober_* metrics on /metrics/probes and the rest
// on /metrics: NewWithProbes keeps the two apart (pass one registry twice
// to put everything on it).
package metrics

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/cm/cpumanager"
	"github.com/lockstep-dev/lockstep/node/eviction"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/node/pleg"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podworkers"
	"github.com/lockstep-dev/lockstep/node/runtimesync"
)

// The metric names, as the kubelet exposes them.
const (
	NodeName                   = "kubelet_node_name"
	PodStartDuration           = "kubelet_pod_start_duration_seconds"
	PodWorkerDuration          = "kubelet_pod_worker_duration_seconds"
	PLEGRelistDuration         = "kubelet_pleg_relist_duration_seconds"
	PLEGRelistInterval         = "kubelet_pleg_relist_interval_seconds"
	PLEGLastSeen               = "kubelet_pleg_last_seen_seconds"
	RunningPods                = "kubelet_running_pods"
	RunningContainers          = "kubelet_running_containers"
	RuntimeOperations          = "kubelet_runtime_operations_total"
	RuntimeOperationsDuration  = "kubelet_runtime_operations_duration_seconds"
	RuntimeOperationsErrors    = "kubelet_runtime_operations_errors_total"
	StartedPods                = "kubelet_started_pods_total"
	StartedPodsErrors          = "kubelet_started_pods_errors_total"
	StartedContainers          = "kubelet_started_containers_total"
	StartedContainersErrors    = "kubelet_started_containers_errors_total"
	Evictions                  = "kubelet_evictions"
	ImageGarbageCollectedTotal = "kubelet_image_garbage_collected_total"
	ProberProbeTotal           = "prober_probe_total"
	ProberProbeDurationSeconds = "prober_probe_duration_seconds"
)

// lockstep's own counters, where the kubelet exposes none: each counts a
// pass of one of the agent's loops, so that a test (or an operator) can
// tell that the agent has done the work that would have shown an effect
// ("nothing happened over N cycles", not "nothing happened over N s").
const (
	// PodWorkerSteps counts pod worker steps by pod and operation type
	// (labels namespace, pod, pod_uid, operation_type; a pod's series
	// go when its worker is forgotten).
	PodWorkerSteps = "lockstep_pod_worker_steps_total"
	// EvictionCycles counts eviction manager cycles that evaluated a
	// stats sample.
	EvictionCycles = "lockstep_eviction_manager_cycles_total"
	// CPUManagerReconciles counts the CPU manager's reconcile passes
	// (static policy only).
	CPUManagerReconciles = "lockstep_cpu_manager_reconciles_total"
	// NodeRegistrationAttempts counts attempts to register (or, with
	// --register-node=false, to find) the Node.
	NodeRegistrationAttempts = "lockstep_node_registration_attempts_total"
)

// Values of the container_type label.
const (
	ContainerTypeContainer     = "container"
	ContainerTypeInitContainer = "init_container"
)

// Values of the container_state label of kubelet_running_containers: the
// CRI states, lower case. SetRunning always reports these four.
const (
	StateCreated = "created"
	StateRunning = "running"
	StateExited  = "exited"
	StateUnknown = "unknown"
)

var knownStates = []string{StateCreated, StateRunning, StateExited, StateUnknown}

// Values of the probe_type and result labels of prober_probe_total.
const (
	ProbeLiveness  = "Liveness"
	ProbeReadiness = "Readiness"
	ProbeStartup   = "Startup"

	ProbeSuccessful = "successful"
	ProbeFailed     = "failed"
	ProbeUnknown    = "unknown"
)

// Bucket layouts, the kubelet's.
var (
	// podStartBuckets are roughly exponential round numbers from half a
	// second to an hour.
	podStartBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	// runtimeBuckets start at 5 ms and grow 2.5 times, 14 buckets.
	runtimeBuckets = prometheus.ExponentialBuckets(0.005, 2.5, 14)
)

// Metrics holds the agent's collectors. Build it with New.
type Metrics struct {
	nodeName          *prometheus.GaugeVec
	podStartDuration  prometheus.Histogram
	podWorkerDuration *prometheus.HistogramVec
	relistDuration    prometheus.Histogram
	relistInterval    prometheus.Histogram
	plegLastSeen      prometheus.Gauge
	runningPods       prometheus.Gauge
	runningContainers *prometheus.GaugeVec
	runtimeOps        *prometheus.CounterVec
	runtimeDuration   *prometheus.HistogramVec
	runtimeErrors     *prometheus.CounterVec
	startedPods       prometheus.Counter
	startedPodsErrors prometheus.Counter
	startedCtrs       *prometheus.CounterVec
	startedCtrsErrors *prometheus.CounterVec
	probeTotal        *prometheus.CounterVec
	probeDuration     *prometheus.HistogramVec
	evictions         *prometheus.CounterVec
	imageGC           *prometheus.CounterVec
	podWorkerSteps    *prometheus.CounterVec
	evictionCycles    prometheus.Counter
	cpuReconciles     prometheus.Counter
	nodeRegistrations prometheus.Counter

	mu         sync.Mutex // guards the fields below
	node       string
	lastStates []string // the container_state labels SetRunning set last
}

// The observer interfaces Metrics satisfies.
var (
	_ pleg.Observer        = (*Metrics)(nil)
	_ podworkers.Observer  = (*Metrics)(nil)
	_ runtimesync.Observer = (*Metrics)(nil)
	_ eviction.Observer    = (*Metrics)(nil)
	_ cpumanager.Observer  = (*Metrics)(nil)
	_ nodestatus.Observer  = (*Metrics)(nil)
)

// NewWithProbes returns the agent's metrics, registered on reg but for
// the prober_* metrics, registered on probes, as the kubelet serves them
// on /metrics/probes (reg and probes may be the same registry). It panics
// if a registry already holds a metric of the same name: give each agent
// fresh ones (prometheus.NewRegistry()).
func NewWithProbes(reg, probes prometheus.Registerer) *Metrics {
	m := &Metrics{
		nodeName:          gaugeVec(NodeName, "The node's name, as a label; the value is always 1.", "node"),
		podStartDuration:  histogram(PodStartDuration, "Seconds from the agent first seeing a pod to the pod running.", podStartBuckets),
		podWorkerDuration: histogramVec(PodWorkerDuration, "Seconds a pod worker step took, by operation type (create, update, sync, kill, terminated).", prometheus.DefBuckets, "operation_type"),
		relistDuration:    histogram(PLEGRelistDuration, "Seconds a PLEG relist took.", prometheus.DefBuckets),
		relistInterval:    histogram(PLEGRelistInterval, "Seconds between the starts of successive PLEG relists.", prometheus.DefBuckets),
		plegLastSeen:      gauge(PLEGLastSeen, "Unix time in seconds of the last PLEG relist whose lists succeeded."),
		runningPods:       gauge(RunningPods, "Pods with a ready pod sandbox."),
		runningContainers: gaugeVec(RunningContainers, "Containers in the runtime, by container state.", "container_state"),
		runtimeOps:        counterVec(RuntimeOperations, "CRI calls made, by operation type.", "operation_type"),
		runtimeDuration:   histogramVec(RuntimeOperationsDuration, "Seconds CRI calls took, by operation type.", runtimeBuckets, "operation_type"),
		runtimeErrors:     counterVec(RuntimeOperationsErrors, "CRI calls that failed, by operation type.", "operation_type"),
		startedPods:       counter(StartedPods, "Pod sandboxes the agent tried to start."),
		startedPodsErrors: counter(StartedPodsErrors, "Pod sandboxes the agent failed to start."),
		startedCtrs:       counterVec(StartedContainers, "Containers the agent tried to start, by container type.", "container_type"),
		startedCtrsErrors: counterVec(StartedContainersErrors, "Containers the agent failed to start, by container type and reason.", "container_type", "code"),
		probeTotal:        counterVec(ProberProbeTotal, "Liveness, readiness and startup probes run, by result.", "probe_type", "result", "container", "pod", "namespace", "pod_uid"),
		probeDuration:     histogramVec(ProberProbeDurationSeconds, "Seconds a probe took to answer.", prometheus.DefBuckets, "probe_type", "container", "pod", "namespace"),
		evictions:         counterVec(Evictions, "Cumulative number of pod evictions by eviction signal.", "eviction_signal"),
		imageGC:           counterVec(ImageGarbageCollectedTotal, "Total number of images garbage collected by the kubelet, whether through disk usage or image age.", "reason"),
		podWorkerSteps:    counterVec(PodWorkerSteps, "Pod worker steps run, by pod and operation type (create, update, sync, kill, terminated); a pod's series are dropped when its worker is forgotten.", "namespace", "pod", "pod_uid", "operation_type"),
		evictionCycles:    counter(EvictionCycles, "Eviction manager cycles that evaluated a stats sample (local storage limits and eviction thresholds)."),
		cpuReconciles:     counter(CPUManagerReconciles, "CPU manager reconcile passes over the running containers' cpusets (static policy)."),
		nodeRegistrations: counter(NodeRegistrationAttempts, "Attempts to register the Node, or with --register-node=false to find the Node an administrator creates."),
	}
	reg.MustRegister(
		m.nodeName, m.podStartDuration, m.podWorkerDuration,
		m.relistDuration, m.relistInterval, m.plegLastSeen,
		m.runningPods, m.runningContainers,
		m.runtimeOps, m.runtimeDuration, m.runtimeErrors,
		m.startedPods, m.startedPodsErrors, m.startedCtrs, m.startedCtrsErrors,
		m.evictions, m.imageGC,
		m.podWorkerSteps, m.evictionCycles, m.cpuReconciles, m.nodeRegistrations,
	)
	probes.MustRegister(m.probeTotal, m.probeDuration)
	m.SetRunning(0, nil)
	return m
}

// counter, counterVec, gauge, gaugeVec, histogram and histogramVec make
// the collectors NewWithProbes registers, one line each.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

func histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
}

func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

// Handler serves g's metrics in the Prometheus exposition formats. A
// collector that fails is reported in the response, the rest still served.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Handler is the package's Handler, for callers holding a *Metrics.
func (m *Metrics) Handler(g prometheus.Gatherer) http.Handler { return Handler(g) }

// SetNodeName sets kubelet_node_name{node=name} to 1 (and drops a
// previous name).
func (m *Metrics) SetNodeName(name string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.node != "" && m.node != name {
		m.nodeName.DeleteLabelValues(m.node)
	}
	m.node = name
	m.nodeName.WithLabelValues(name).Set(1)
}

// ObserveEviction counts a pod evicted for signal (kubelet_evictions,
// label eviction_signal: memory.available, nodefs.available, …).
func (m *Metrics) ObserveEviction(signal string) {
	if m == nil {
		return
	}
	m.evictions.WithLabelValues(signal).Inc()
}

// ObserveImageGC counts an image the garbage collector removed
// (kubelet_image_garbage_collected_total, label reason: space or age).
func (m *Metrics) ObserveImageGC(reason string) {
	if m == nil {
		return
	}
	m.imageGC.WithLabelValues(reason).Inc()
}

// ObservePodStartDuration records the time from the agent first seeing a
// pod to the pod running (kubelet_pod_start_duration_seconds); call it
// once per pod, when it is first seen running.
func (m *Metrics) ObservePodStartDuration(d time.Duration) {
	if m == nil {
		return
	}
	m.podStartDuration.Observe(d.Seconds())
}

// SetRunning sets kubelet_running_pods to pods and
// kubelet_running_containers to containersByState, keyed by container
// state (any case; reported lower case, "Running" → "running"). The four
// CRI states are always reported, 0 when absent; another state is
// reported while present.
func (m *Metrics) SetRunning(pods int, containersByState map[string]int) {
	if m == nil {
		return
	}
	counts := map[string]int{}
	for _, s := range knownStates {
		counts[s] = 0
	}
	for s, n := range containersByState {
		counts[strings.ToLower(s)] += n
	}
	states := make([]string, 0, len(counts))
	for s := range counts {
		states = append(states, s)
	}
	slices.Sort(states)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.runningPods.Set(float64(pods))
	for _, s := range m.lastStates {
		if _, ok := counts[s]; !ok {
			m.runningContainers.DeleteLabelValues(s)
		}
	}
	for _, s := range states {
		m.runningContainers.WithLabelValues(s).Set(float64(counts[s]))
	}
	m.lastStates = states
}

// CountRunning counts, over pod statuses from the runtime, the pods with a
// ready sandbox and the containers by state: the arguments of SetRunning.
func CountRunning(pods []*podstate.PodStatus) (int, map[string]int) {
	running := 0
	byState := map[string]int{}
	for _, p := range pods {
		if p == nil {
			continue
		}
		if slices.ContainsFunc(p.Sandboxes, func(s podstate.Sandbox) bool { return s.State == podstate.SandboxReady }) {
			running++
		}
		for _, c := range p.Containers {
			byState[ContainerStateLabel(c.State)]++
		}
	}
	return running, byState
}

// ContainerStateLabel is the container_state label of a CRI state.
func ContainerStateLabel(s podstate.ContainerState) string {
	switch s {
	case podstate.ContainerCreated:
		return StateCreated
	case podstate.ContainerRunning:
		return StateRunning
	case podstate.ContainerExited:
		return StateExited
	}
	return StateUnknown
}

// ProbeTarget names the container a probe ran against.
type ProbeTarget struct {
	Namespace, Pod, PodUID, Container string
}

// ObserveProbe counts a probe's result (prober_probe_total) and, for a
// probe that got an answer (result successful or failed), its duration
// (prober_probe_duration_seconds). probeType is ProbeLiveness,
// ProbeReadiness or ProbeStartup; result ProbeSuccessful, ProbeFailed or
// ProbeUnknown.
func (m *Metrics) ObserveProbe(probeType, result string, t ProbeTarget, d time.Duration) {
	if m == nil {
		return
	}
	m.probeTotal.WithLabelValues(probeType, result, t.Container, t.Pod, t.Namespace, t.PodUID).Inc()
	if result != ProbeUnknown {
		m.probeDuration.WithLabelValues(probeType, t.Container, t.Pod, t.Namespace).Observe(d.Seconds())
	}
}

// ForgetProbes drops the probe series of a pod that is gone, so that label
// sets of deleted pods do not pile up.
func (m *Metrics) ForgetProbes(t ProbeTarget) {
	if m == nil {
		return
	}
	m.probeTotal.DeletePartialMatch(prometheus.Labels{"pod_uid": t.PodUID})
	m.probeDuration.DeletePartialMatch(prometheus.Labels{"pod": t.Pod, "namespace": t.Namespace})
}

// ObserveRelist records a full PLEG relist (pleg.Observer): its duration,
// the interval since the previous successful relist (when there was one)
// and the time of the last successful relist (kubelet_pleg_last_seen_seconds,
// in Unix seconds).
func (m *Metrics) ObserveRelist(duration, interval time.Duration, lastSeen time.Time) {
	if m == nil {
		return
	}
	m.relistDuration.Observe(duration.Seconds())
	if interval > 0 {
		m.relistInterval.Observe(interval.Seconds())
	}
	if !lastSeen.IsZero() {
		m.plegLastSeen.Set(float64(lastSeen.Unix()))
	}
}

// ObservePodWorker records one pod worker step (podworkers.Observer): its
// duration under its operation type, and one more step of the pod
// (lockstep_pod_worker_steps_total).
func (m *Metrics) ObservePodWorker(pod podworkers.PodRef, op podworkers.Operation, duration time.Duration) {
	if m == nil {
		return
	}
	m.podWorkerDuration.WithLabelValues(string(op)).Observe(duration.Seconds())
	m.podWorkerSteps.WithLabelValues(pod.Namespace, pod.Name, string(pod.UID), string(op)).Inc()
}

// ForgetPodWorker drops the step series of a pod whose worker is gone
// (podworkers.Observer).
func (m *Metrics) ForgetPodWorker(uid types.UID) {
	if m == nil {
		return
	}
	m.podWorkerSteps.DeletePartialMatch(prometheus.Labels{"pod_uid": string(uid)})
}

// ObserveEvictionCycle counts an eviction manager cycle that evaluated a
// stats sample (eviction.Observer).
func (m *Metrics) ObserveEvictionCycle() {
	if m == nil {
		return
	}
	m.evictionCycles.Inc()
}

// ObserveCPUReconcile counts a CPU manager reconcile pass
// (cpumanager.Observer).
func (m *Metrics) ObserveCPUReconcile() {
	if m == nil {
		return
	}
	m.cpuReconciles.Inc()
}

// ObserveRegistrationAttempt counts an attempt to register or find the
// Node (nodestatus.Observer).
func (m *Metrics) ObserveRegistrationAttempt() {
	if m == nil {
		return
	}
	m.nodeRegistrations.Inc()
}

// ObservePodSandboxStart counts a pod sandbox start attempt and, if err
// is set, its failure (runtimesync.Observer).
func (m *Metrics) ObservePodSandboxStart(err error) {
	if m == nil {
		return
	}
	m.startedPods.Inc()
	if err != nil {
		m.startedPodsErrors.Inc()
	}
}

// ObserveContainerStart counts a container start attempt and, if code is
// set, its failure under that code (runtimesync.Observer).
func (m *Metrics) ObserveContainerStart(init bool, code string) {
	if m == nil {
		return
	}
	typ := ContainerTypeContainer
	if init {
		typ = ContainerTypeInitContainer
	}
	m.startedCtrs.WithLabelValues(typ).Inc()
	if code != "" {
		m.startedCtrsErrors.WithLabelValues(typ, code).Inc()
	}
}

// observeRuntime records one CRI call: its count, duration and failure.
func (m *Metrics) observeRuntime(op string, d time.Duration, err error) {
	if m == nil {
		return
	}
	m.runtimeOps.WithLabelValues(op).Inc()
	m.runtimeDuration.WithLabelValues(op).Observe(d.Seconds())
	if err != nil {
		m.runtimeErrors.WithLabelValues(op).Inc()
	}
}
