// Package agent assembles the node agent from its parts and runs its
// SyncLoop: config updates from the pod sources, PLEG lifecycle events, the
// 1 s sync tick (pods whose requeue time is due) and the 2 s housekeeping
// all turn into work for the pod workers, whose steps this package performs
// (the Syncer): wait for a runtime view newer than the last action, compute
// and execute the runtime actions, and publish the pod's status.
package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/cm/cgroups"
	"github.com/lockstep-dev/lockstep/node/cm/cpumanager"
	"github.com/lockstep-dev/lockstep/node/cm/devicemanager"
	"github.com/lockstep-dev/lockstep/node/cm/memorymanager"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/eviction"
	"github.com/lockstep-dev/lockstep/node/imagegc"
	"github.com/lockstep-dev/lockstep/node/logrotate"
	"github.com/lockstep-dev/lockstep/node/metrics"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/node/objcache"
	"github.com/lockstep-dev/lockstep/node/oomwatch"
	"github.com/lockstep-dev/lockstep/node/pleg"
	"github.com/lockstep-dev/lockstep/node/podadmit"
	"github.com/lockstep-dev/lockstep/node/podsource"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/podworkers"
	"github.com/lockstep-dev/lockstep/node/prober"
	"github.com/lockstep-dev/lockstep/node/runtimesync"
	"github.com/lockstep-dev/lockstep/node/servicecache"
	"github.com/lockstep-dev/lockstep/node/shutdown"
	"github.com/lockstep-dev/lockstep/node/stats"
	"github.com/lockstep-dev/lockstep/node/status"
	"github.com/lockstep-dev/lockstep/node/termmsg"
	"github.com/lockstep-dev/lockstep/node/unseen"
	"github.com/lockstep-dev/lockstep/node/userns"
	"github.com/lockstep-dev/lockstep/node/volume"
)

// Config configures an agent. Zero durations take the kubelet's defaults.
type Config struct {
	// NodeName is the node this agent runs.
	NodeName string
	// ManifestDir is the static pod manifest directory ("" : none).
	ManifestDir string
	// FileCheckFrequency is how often the manifest directory is re-read.
	FileCheckFrequency time.Duration
	// ManifestURL is the HTTP static pod source ("": none), fetched
	// through deps.ManifestHTTP every HTTPCheckFrequency with the headers
	// ManifestURLHeader.
	ManifestURL        string
	ManifestURLHeader  map[string][]string
	HTTPCheckFrequency time.Duration
	// SyncFrequency is the resync period of a healthy pod (jittered).
	SyncFrequency time.Duration
	// SyncTick is the period at which due pods are synced.
	SyncTick time.Duration
	// HousekeepingPeriod is the period of orphan and garbage cleanup.
	HousekeepingPeriod time.Duration
	// Node is what the node contributes to sandbox and container configs.
	Node podspec.NodeInfo
	// RuntimeType prefixes container IDs in statuses ("containerd").
	RuntimeType string
	// PodNetwork reads pods' network usage where the runtime's stats have
	// none (the real node's network namespaces); nil leaves it out.
	PodNetwork stats.NetworkReader
	// KernelStats reads the kernel's figures of the containers', pods'
	// and system cgroups (the Summary's and /metrics/cadvisor's); nil
	// leaves them out.
	KernelStats deps.CgroupStatsReader
	// RuntimeSync tunes the executor (back-off curves, runtime handler).
	RuntimeSync runtimesync.Config
	// PLEG tunes the lifecycle event generator.
	PLEG pleg.Config
	// Status tunes the status manager.
	Status status.Config
	// NodeStatus tunes node registration, node status and the lease (used
	// when the agent has an apiserver); NodeName is filled in.
	NodeStatus nodestatus.Config
	// Metrics receives the kubelet's metrics; nil turns them off.
	Metrics *metrics.Metrics
	// AllowedUnsafeSysctls are the sysctls (names, or prefixes ending in
	// '*') pods may set beyond the safe ones (--allowed-unsafe-sysctls).
	AllowedUnsafeSysctls []string
	// Volumes tunes the volume manager; its Node is cfg.Node.
	Volumes volume.Config
	// Cgroups configures the pod and QoS cgroups (--cgroups-per-qos,
	// --cgroup-root, --cgroup-driver, --enforce-node-allocatable).
	Cgroups cgroups.Config
	// ShutdownGroups are graceful node shutdown's pod groups
	// (shutdown.GroupsFor); none: off.
	ShutdownGroups []shutdown.Group
	// CPUManager configures the CPU manager (--cpu-manager-policy,
	// --reserved-cpus, …); its RootDir defaults to Node.RootDir.
	CPUManager cpumanager.Config
	// MemoryManager configures the memory manager
	// (--memory-manager-policy, --reserved-memory); its NodeReserved is
	// NodeStatus.Reserved's memory with the hard eviction reserve.
	MemoryManager memorymanager.Config
	// TopologyManagerPolicy is none (default), best-effort, restricted
	// or single-numa-node (--topology-manager-policy; container scope).
	TopologyManagerPolicy string
	// Eviction is the eviction configuration (thresholds, grace, pressure
	// transition period); no thresholds: nothing is ever evicted, and the
	// node never reports pressure.
	Eviction eviction.Config
	// ImageGC configures the image garbage collector; a zero Policy is
	// the kubelet's default (85 %, 80 %, 2 min, no maximum age). Its
	// state lives under the root directory; NodeName is filled in.
	ImageGC imagegc.Config
	// LogRotation is the container log rotation policy (zero fields: the
	// kubelet's defaults, 10Mi, 5 files, 1 worker, every 10 s).
	LogRotation logrotate.Config
	// DevicePluginDir is the device plugin directory
	// (<root-dir>/device-plugins), where device allocations are
	// checkpointed; "" keeps no checkpoint. Device plugins register
	// through deps.Deps.DevicePlugins (nil: none).
	DevicePluginDir string
}

// Agent is one node agent: the pod sources, the pod workers and what they
// sync with, and the parts grouped by concern (admission, the container
// manager, the per-pod managers, the node-level managers).
type Agent struct {
	d   deps.Deps
	cfg Config

	// updates carries the sources' pod updates to the SyncLoop; merger
	// is the one store of the pods the sources want.
	updates *deps.Inbox[podsource.Update]
	merger  *podsource.Merger
	pleg    *pleg.PLEG
	queue   *podworkers.WorkQueue
	workers *podworkers.PodWorkers
	exec    *runtimesync.Executor
	status  *status.Manager
	// unseen are the containers started, not yet seen in the runtime's view.
	unseen *unseen.Tracker

	admission admitting
	cm        containerManager
	pods      podParts
	node      nodeParts
	loop      loopTimes
}

// admitting is what decides whether a pod may run.
type admitting struct {
	// book is the admission state: the pods admitted, refused, stopped,
	// with a deferred resize.
	book *podadmit.Book
	// node is the Node admission decides against.
	node *podadmit.NodeView
	// sysctls decides which sysctls pods may set.
	sysctls *admission.SysctlAllowlist
	// appArmor: the host has AppArmor enabled (read once from the machine).
	appArmor bool
}

// podParts are the managers a pod's sync uses beside the executor.
type podParts struct {
	volumes *volume.Manager
	// objects is the watched cache of the configMaps and secrets pods
	// reference, shared by volumes and environments.
	objects *objcache.Cache
	// services is the watched cache of every service (nil without an
	// apiserver).
	services *servicecache.Cache
	// userns allocates hostUsers: false pods' user namespaces (nil
	// without files: such pods fail).
	userns *userns.Manager
	probes *prober.Manager
}

// nodeParts are the node-level managers.
type nodeParts struct {
	// status registers the Node and writes its status and lease (nil
	// without an apiserver).
	status *nodestatus.Manager
	// evictions is the eviction manager; stats its sampler.
	evictions *eviction.Manager
	stats     *stats.Provider
	// shutdown is graceful node shutdown.
	shutdown *shutdown.Manager
	// images is the image garbage collector (also the eviction manager's
	// image reclaim).
	images *imagegc.Manager
	// logs rotates the running containers' logs.
	logs *logrotate.Manager
}

// loopTimes are when the agent started and the SyncLoop last ran.
type loopTimes struct {
	mu    sync.Mutex
	start time.Time
	last  time.Time
}

// New builds an agent over d. Nothing runs until Start, but the root
// directory is made a shared mount first (volume.ShareRootDir, as the
// kubelet's setupDataDirs). It fails when that fails or when a resource
// manager cannot start (a CPU manager checkpoint that does not fit its
// policy or the machine).
func New(d deps.Deps, cfg Config) (*Agent, error) {
	cfg = withDefaults(d, cfg)
	if err := volume.ShareRootDir(d.Files, d.Mounts, cfg.Node.RootDir); err != nil {
		return nil, err
	}
	cm, err := newContainerManager(d, &cfg)
	if err != nil {
		return nil, err
	}
	d = instrumented(d, &cfg)
	pods := podParts{objects: objcache.New(d.Core, d.API.ObjectWatches)}
	if d.API.Services != nil {
		pods.services = servicecache.New(d.Core, d.API.Services)
	}
	cm.devices = newDevices(d, cfg)
	pods.userns = newUserNamespaces(d, cfg)
	a := &Agent{}
	cfg.RuntimeSync.SandboxReady = a.sandboxReady
	*a = Agent{
		d: d, cfg: cfg, cm: cm, pods: pods,
		updates: deps.NewInbox[podsource.Update](d.Tasks, "config updates"),
		pleg:    pleg.New(d.Core, d.Runtime, d.RuntimeEvents, cfg.PLEG),
		queue:   podworkers.NewWorkQueue(d.Clock),
		exec:    newExecutor(d, cfg, pods, cm.devices),
		admission: admitting{
			book: podadmit.NewBook(), node: podadmit.NewNodeView(d.Core, cfg.NodeName, d.API.NodeWatch, d.API.Nodes),
			sysctls: sysctlAllowlist(d, cfg.AllowedUnsafeSysctls), appArmor: hostAppArmor(d),
		},
		unseen: unseen.New(),
	}
	a.node = a.newNodeParts()
	a.pods.probes = a.newProber()
	volumes := cfg.Volumes
	volumes.Node = cfg.Node
	a.pods.volumes = volume.New(d.Core, volume.Ports{Files: d.Files, Mounts: d.Mounts, Objects: d.API.Objects(), Cache: pods.objects, Tokens: d.API.Tokens, Claims: d.API.Claims, TrustBundles: d.API.TrustBundles, Events: d.API.Events}, volumes)
	a.merger = podsource.NewMerger(d.Core, a.sourceNames(), a.updates)
	a.status = status.NewManager(d.Core, d.API.Pods, a.merger, cfg.Status)
	a.node.status = a.newNodeStatus()
	return a, nil
}

// withDefaults fills cfg's zero durations with the kubelet's defaults and
// what the machine says about the node (allocatable less the hard
// eviction reserve, memory capacity, huge pages) into cfg.Node.
func withDefaults(d deps.Deps, cfg Config) Config {
	if cfg.SyncFrequency <= 0 {
		cfg.SyncFrequency = time.Minute
	}
	if cfg.SyncTick <= 0 {
		cfg.SyncTick = time.Second
	}
	if cfg.HousekeepingPeriod <= 0 {
		cfg.HousekeepingPeriod = 2 * time.Second
	}
	if cfg.FileCheckFrequency <= 0 {
		cfg.FileCheckFrequency = 20 * time.Second
	}
	if cfg.Node.NodeName == "" {
		cfg.Node.NodeName = cfg.NodeName
	}
	cfg.NodeStatus.Reserved = withEvictionReserve(d.Machine, cfg.NodeStatus, cfg.Eviction.Thresholds)
	cfg.Node = withMachineFacts(d.Machine, d.Log, cfg.Node, cfg.NodeStatus)
	cfg.RuntimeSync.Node = cfg.Node
	if d.Files != nil {
		cfg.PLEG.Messages = termmsg.New(d.Files)
	}
	return cfg
}

// instrumented wraps the runtime and image services in the metrics and
// points the PLEG's and executor's observers at them (cfg.Metrics nil: d
// as it is).
func instrumented(d deps.Deps, cfg *Config) deps.Deps {
	m := cfg.Metrics
	if m == nil {
		return d
	}
	d.Runtime = metrics.InstrumentRuntime(d.Runtime, m, d.Clock)
	d.Images = metrics.InstrumentImages(d.Images, m, d.Clock)
	cfg.PLEG.Observer = m
	cfg.RuntimeSync.Observer = m
	m.SetNodeName(cfg.NodeName)
	return d
}

// newExecutor builds the runtime sync executor over the agent's ports.
func newExecutor(d deps.Deps, cfg Config, pods podParts, devices *devicemanager.Manager) *runtimesync.Executor {
	return runtimesync.NewExecutor(d.Core, runtimesync.Ports{
		Runtime: d.Runtime, Images: d.Images, Files: d.Files, Events: d.API.Events,
		ConfigMaps: d.API.ConfigMaps, Secrets: d.API.Secrets, Objects: pods.objects, Services: pods.services, RuntimeClasses: d.API.RuntimeClasses,
		ProbeNet: d.ProbeNet, UserNamespaces: usernsPort(pods.userns), Devices: devicesPort(devices),
	}, cfg.RuntimeSync)
}

// newNodeParts builds the node-level managers but the node status (which
// needs the pod sources): the stats sampler, image GC, log rotation, the
// eviction manager and graceful shutdown.
func (a *Agent) newNodeParts() nodeParts {
	d, cfg := a.d, a.cfg
	var n nodeParts
	n.stats = stats.New(d.Core, stats.Ports{Runtime: d.Runtime, Images: d.Images, Machine: d.Machine, Disk: d.Disk, Pods: admittedPodList{a}, Network: cfg.PodNetwork, Cgroups: cfg.KernelStats},
		stats.Config{Period: cfg.Eviction.Period, RootDir: cfg.Node.RootDir, PodLogsRoot: cfg.Node.PodLogsRoot})
	n.images = newImageGC(d, cfg)
	n.logs = logrotate.New(d.Core, d.Runtime, d.Files, cfg.LogRotation)
	ep := eviction.Ports{Stats: n.stats, Pods: evictionPods{a}, Reclaim: reclaimer{a}, Events: d.API.Events, MemoryThreshold: d.MemoryThreshold}
	if cfg.Metrics != nil {
		ep.Metrics = cfg.Metrics
	}
	n.evictions = eviction.New(d.Core, ep, cfg.Eviction, cfg.NodeName, cfg.Node.Allocatable.Memory().Value())
	n.shutdown = shutdown.New(d.Core, shutdown.Ports{Notifier: d.Shutdown, Pods: shutdownPods{a}, Status: nodeSyncer{a}, Events: d.API.Events},
		cfg.ShutdownGroups, cfg.NodeName)
	return n
}

// sourceNames are the pod sources the agent has.
func (a *Agent) sourceNames() []string {
	var sources []string
	if a.d.API.Pods != nil {
		sources = append(sources, podsource.SourceAPI)
	}
	if a.cfg.ManifestDir != "" {
		sources = append(sources, podsource.SourceFile)
	}
	if a.httpSource() {
		sources = append(sources, podsource.SourceHTTP)
	}
	return sources
}

// newNodeStatus builds the node status manager (nil without an apiserver
// to write the Node and its lease to).
func (a *Agent) newNodeStatus() *nodestatus.Manager {
	d, cfg := a.d, a.cfg
	if d.API.Nodes == nil || d.API.Leases == nil {
		return nil
	}
	nc := cfg.NodeStatus
	nc.NodeName = cfg.NodeName
	nc.Pressure, nc.Shutdown = a.node.evictions, a.node.shutdown
	if a.cm.devices != nil {
		nc.Devices = a.cm.devices
	}
	if nc.NodeIP == "" {
		nc.NodeIP = cfg.Node.HostIP
	}
	if nc.SecondaryNodeIP == "" && len(cfg.Node.HostIPs) > 1 {
		nc.SecondaryNodeIP = cfg.Node.HostIPs[1]
	}
	np := nodestatus.Ports{Nodes: d.API.Nodes, Leases: d.API.Leases, Events: d.API.Events, Runtime: d.Runtime, Images: d.Images, Machine: d.Machine}
	if cfg.Metrics != nil {
		np.Metrics = cfg.Metrics
	}
	return nodestatus.New(d.Core, np, nc, plegHealth{a.pleg})
}

// Start launches the agent's tasks; they stop when ctx ends.
func (a *Agent) Start(ctx context.Context) {
	a.loop.start = a.d.Clock.Now()
	a.loop.last = a.loop.start
	a.d.Log.Info("starting agent")
	if a.node.status != nil {
		a.node.status.BirthCry()
	}
	wc := podworkers.Config{ResyncInterval: a.cfg.SyncFrequency}
	if a.cfg.Metrics != nil {
		wc.Observer = a.cfg.Metrics
	}
	a.workers = podworkers.New(ctx, a.d.Core, a, a.queue, wc)
	a.startCgroups()
	if a.cm.devices != nil {
		a.cm.devices.Start(ctx)
	}
	a.pleg.Start(ctx)
	a.pods.objects.Start(ctx)
	if a.pods.services != nil {
		a.pods.services.Start(ctx)
	}
	a.pods.volumes.Start(ctx)
	a.pods.probes.Start(ctx)
	a.cm.cpus.Start(ctx, cpuPods{a})
	// Local storage limits are enforced with or without thresholds, as
	// the kubelet's localStorageCapacityIsolation (default true).
	if a.d.Machine != nil {
		a.node.evictions.Start(ctx)
	}
	if a.d.Machine != nil {
		a.node.images.Start(ctx)
	}
	if a.d.Files != nil {
		a.node.logs.Start(ctx)
	}
	oomwatch.Start(ctx, a.d.Core, a.d.OOMKills, a.d.API.Events, a.cfg.NodeName)
	if a.admission.node.Watched() {
		a.d.Tasks.Go("node watch", func() { a.admission.node.Run(ctx) })
	}
	a.node.shutdown.Start(ctx)
	if a.node.status != nil {
		a.node.status.Start(ctx)
	}
	if a.d.API.Pods != nil {
		a.status.Start(ctx)
		src := podsource.NewAPISource(a.d.Core, a.d.API.Pods, a.cfg.NodeName, a.merger)
		a.d.Tasks.Go("source api", func() { src.Run(ctx) })
	}
	if a.cfg.ManifestDir != "" {
		src := podsource.NewFileSource(a.d.Core, a.d.Files, a.d.ManifestChanges, podsource.FileConfig{
			Dir: a.cfg.ManifestDir, NodeName: a.cfg.NodeName, Period: a.cfg.FileCheckFrequency,
			OnManifestError: a.manifestError,
		}, a.merger)
		a.d.Tasks.Go("source file", func() { src.Run(ctx) })
	}
	if a.httpSource() {
		src := podsource.NewHTTPSource(a.d.Core, a.d.ManifestHTTP, podsource.HTTPConfig{
			URL: a.cfg.ManifestURL, Header: a.cfg.ManifestURLHeader, NodeName: a.cfg.NodeName, Period: a.cfg.HTTPCheckFrequency,
			OnManifestError: a.manifestError,
		}, a.merger)
		a.d.Tasks.Go("source http", func() { src.Run(ctx) })
	}
	a.d.Tasks.Go("syncloop config", func() { a.configLoop(ctx) })
	a.d.Tasks.Go("syncloop pleg", func() { a.plegLoop(ctx) })
	a.d.Tasks.Go("syncloop tick", func() { a.tickLoop(ctx) })
	a.d.Tasks.Go("syncloop housekeeping", func() { a.housekeepingLoop(ctx) })
}

// httpSource reports whether the agent has an HTTP static pod source.
func (a *Agent) httpSource() bool { return a.cfg.ManifestURL != "" && a.d.ManifestHTTP != nil }

func (a *Agent) manifestError(file string, err error) {
	a.d.Log.Warn("static pod manifest skipped", "file", file, "error", err.Error())
	if a.d.API.Events != nil {
		ref := &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: a.cfg.NodeName, UID: types.UID(a.cfg.NodeName)}
		a.d.API.Events.Event(ref, corev1.EventTypeWarning, "FailedStaticPodManifest", fmt.Sprintf("manifest %s: %v", file, err))
	}
}

// LastLoop is when the SyncLoop last ran (for /healthz).
func (a *Agent) LastLoop() time.Time {
	a.loop.mu.Lock()
	defer a.loop.mu.Unlock()
	return a.loop.last
}

// WakePod asks for a sync of the pod now: probe verdict changes wake the
// SyncLoop through it.
func (a *Agent) WakePod(uid types.UID) {
	if pod, ok := a.merger.Pod(uid); ok {
		a.workers.UpdatePod(podworkers.Work{Type: podworkers.Sync, UID: uid, Pod: pod})
	}
}

// plegHealth adapts the PLEG to the node status manager's health source.
type plegHealth struct{ p *pleg.PLEG }

func (h plegHealth) PLEGHealthy() (bool, error) { return h.p.Healthy() }

// NodeReady reports the node's Ready condition as the agent computes it
// (true without an apiserver, where there is no node object).
func (a *Agent) NodeReady() (bool, string, string) {
	if a.node.status == nil {
		return true, "", ""
	}
	return a.node.status.Ready()
}

// NodeRegistration says why the Node is not registered yet (nil once it
// is, and without an apiserver).
func (a *Agent) NodeRegistration() error {
	if a.node.status == nil {
		return nil
	}
	return a.node.status.RegistrationError()
}

// PLEGHealthy reports the PLEG's health.
func (a *Agent) PLEGHealthy() (bool, error) { return a.pleg.Healthy() }

// SourcesSeen reports whether every pod source delivered its first
// snapshot (a manifest scan, a fetch, an API list).
func (a *Agent) SourcesSeen() bool { return a.merger.AllSeen() }

// Pods returns the pods the agent manages (static pods included), sorted.
func (a *Agent) Pods() []*corev1.Pod { return a.merger.Pods() }

// ProbeWorkers is the number of running probe workers.
func (a *Agent) ProbeWorkers() int { return a.pods.probes.Workers() }

// PodStatus returns the status the agent last computed for a pod.
func (a *Agent) PodStatus(uid types.UID) (corev1.PodStatus, bool) { return a.status.PodStatus(uid) }

func (a *Agent) configLoop(ctx context.Context) {
	for {
		u, err := a.updates.Get(ctx)
		if err != nil {
			return
		}
		a.handleUpdate(u)
	}
}

func (a *Agent) handleUpdate(u podsource.Update) {
	if u.Op == podsource.OpAdd {
		// Admitted in creation order, as the kubelet does, so the same
		// pods win whatever order a source lists them in.
		u.Pods = slices.Clone(u.Pods)
		podutil.SortByCreation(u.Pods)
	}
	for _, pod := range u.Pods {
		w, ok := workFor(u.Op, u.Source, pod)
		if !ok {
			continue
		}
		if w.Type == podworkers.Create {
			a.admit(pod)
		}
		a.workers.UpdatePod(w)
		if u.Op == podsource.OpDelete && a.workers.IsFinished(pod.UID) && !podutil.IsStaticPod(pod) {
			// Terminated before the user deleted it (a Job-like pod that
			// finished): its worker has nothing more to do, so the
			// deletion completes here.
			a.deleteIfDeleted(pod.UID)
		}
	}
}

// workFor is the work a config update (op, from source) asks of pod's
// worker; ok is false when it asks none: a mirror pod (the static pod it
// mirrors is what runs), or a change the workers need not see (status,
// resource version: the merger, the one store of desired pods, already
// holds the new object), except when another writer changed a readiness
// gate's condition (the worker must recompute Ready from it). A pod added
// already being deleted is killed, not created.
func workFor(op podsource.Op, source string, pod *corev1.Pod) (podworkers.Work, bool) {
	if podutil.IsMirrorPod(pod) {
		return podworkers.Work{}, false
	}
	kill := podworkers.Work{Type: podworkers.Kill, UID: pod.UID, Pod: pod, Reason: "deleted"}
	switch op {
	case podsource.OpAdd:
		if pod.DeletionTimestamp != nil {
			return kill, true
		}
		return podworkers.Work{Type: podworkers.Create, UID: pod.UID, Pod: pod}, true
	case podsource.OpUpdate:
		return podworkers.Work{Type: podworkers.Update, UID: pod.UID, Pod: pod}, true
	case podsource.OpDelete:
		return kill, true
	case podsource.OpRemove:
		kill.GracePeriod, kill.Reason = removedGrace(source), "removed from "+source
		return kill, true
	case podsource.OpReconcile:
		if status.NeedsReadinessReconcile(pod) {
			return podworkers.Work{Type: podworkers.Update, UID: pod.UID, Pod: pod}, true
		}
	}
	return podworkers.Work{}, false
}

// removedGrace is the grace period override for a pod gone from source:
// none for a static pod (its own grace applies), zero for an API pod (it
// was force-deleted, or its deletion completed: nobody waits on it any
// more, and its name may already be reused).
func removedGrace(source string) *int64 {
	if source != podsource.SourceAPI {
		return nil
	}
	zero := int64(0)
	return &zero
}

func (a *Agent) plegLoop(ctx context.Context) {
	for {
		ev, err := a.pleg.Events().Get(ctx)
		if err != nil {
			return
		}
		if pod, ok := a.merger.Pod(ev.UID); ok {
			a.workers.UpdatePod(podworkers.Work{Type: podworkers.Sync, UID: ev.UID, Pod: pod})
			if a.d.Fault(deps.FaultPLEGEventRepeated) {
				a.workers.UpdatePod(podworkers.Work{Type: podworkers.Sync, UID: ev.UID, Pod: pod})
			}
		}
	}
}

func (a *Agent) tickLoop(ctx context.Context) {
	t := a.d.Tasks.NewTicker("sync tick", a.cfg.SyncTick)
	defer t.Stop()
	for t.Wait(ctx) == nil {
		a.loop.mu.Lock()
		a.loop.last = a.d.Clock.Now()
		a.loop.mu.Unlock()
		due := a.queue.GetDue()
		if len(due) > 1 && a.d.Fault(deps.FaultQueueReversed) {
			slices.Reverse(due)
		}
		for _, uid := range due {
			a.workers.Requeue(uid)
			if a.d.Fault(deps.FaultRequeueRepeated) {
				a.workers.Requeue(uid)
			}
		}

	}
}

// Stats is the node's stats sampler: the eviction manager's cycles (or,
// without eviction thresholds, its own loop) keep its latest sample fresh
// for the stats endpoints.
func (a *Agent) Stats() *stats.Provider { return a.node.stats }
