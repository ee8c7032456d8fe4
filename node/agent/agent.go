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
	"github.com/lockstep-dev/lockstep/node/allocation"
	"github.com/lockstep-dev/lockstep/node/cgroups"
	"github.com/lockstep-dev/lockstep/node/cpumanager"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/devicemanager"
	"github.com/lockstep-dev/lockstep/node/eviction"
	"github.com/lockstep-dev/lockstep/node/imagegc"
	"github.com/lockstep-dev/lockstep/node/logrotate"
	"github.com/lockstep-dev/lockstep/node/memorymanager"
	"github.com/lockstep-dev/lockstep/node/metrics"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/node/objcache"
	"github.com/lockstep-dev/lockstep/node/oomwatch"
	"github.com/lockstep-dev/lockstep/node/pleg"
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

// Agent is one node agent.
type Agent struct {
	d   deps.Deps
	cfg Config

	updates *deps.Inbox[podsource.Update]
	merger  *podsource.Merger
	pleg    *pleg.PLEG
	queue   *podworkers.WorkQueue
	workers *podworkers.PodWorkers
	exec    *runtimesync.Executor
	status  *status.Manager
	node    *nodestatus.Manager
	volumes *volume.Manager
	// objects is the watched cache of the configMaps and secrets pods
	// reference, shared by volumes and environments.
	objects *objcache.Cache
	// services is the watched cache of every service (nil without an
	// apiserver).
	services *servicecache.Cache
	// userns allocates hostUsers: false pods' user namespaces (nil
	// without files: such pods fail).
	userns  *userns.Manager
	probes  *prober.Manager
	cgroups *cgroups.Manager
	// alloc holds the pods' allocated resources (checkpointed).
	alloc *allocation.Store
	// resources are the CPU, memory and topology managers.
	resources resourceManagers
	// devices is the device plugin manager (nil without a registry).
	devices *devicemanager.Manager
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

	startTime time.Time

	mu       sync.Mutex
	lastLoop time.Time
	expected map[types.UID]map[string]expectation // containers started, not yet seen in the cache
	// unsupported is what was last reported about each pod's unsupported
	// fields (see checkUnsupported).
	unsupported map[types.UID]string
	// sysctls decides which sysctls pods may set.
	sysctls *admission.SysctlAllowlist
	// admitted are the pods admitted that still count against the node,
	// with what they use of it; rejected the pods admission refused;
	// evicted the pods the eviction manager evicted or admission preempted
	// (see pressure.go).
	admitted *admission.Admitted
	rejected map[types.UID]admission.Decision
	// nodeRead is the Node admission last read from the API, at
	// nodeReadAt, or last received from its watch (see admissionNode).
	nodeRead   *corev1.Node
	nodeReadAt time.Time
	evicted    map[types.UID]stopNote
	// pendingResizes are the pods whose resize is deferred.
	pendingResizes map[types.UID]bool
}

// New builds an agent over d. Nothing runs until Start. It fails when a
// resource manager cannot start (a CPU manager checkpoint that does not
// fit its policy or the machine).
func New(d deps.Deps, cfg Config) (*Agent, error) {
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
	alloc := newAllocations(d, cfg)
	cfg.RuntimeSync.Resized = alloc.Resized
	pods := newCgroups(d, cfg)
	cfg.RuntimeSync.CgroupParent = func(pod *corev1.Pod) string { return pods.CgroupParent(pod, podspec.QOSClass(pod)) }
	resources, err := newResourceManagers(d, cfg)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeSync.ContainerCPUSet = resources.cpuSet
	if m := cfg.Metrics; m != nil {
		d.Runtime = metrics.InstrumentRuntime(d.Runtime, m, d.Clock)
		d.Images = metrics.InstrumentImages(d.Images, m, d.Clock)
		cfg.PLEG.Observer = m
		cfg.RuntimeSync.Observer = m
		m.SetNodeName(cfg.NodeName)
	}
	objects := objcache.New(d.Core, d.API.ObjectWatches)
	var services *servicecache.Cache
	if d.API.Services != nil {
		services = servicecache.New(d.Core, d.API.Services)
	}
	devices := newDevices(d, cfg)
	users := newUserNamespaces(d, cfg)
	a := &Agent{
		d:        d,
		objects:  objects,
		services: services,
		userns:   users,
		cfg:      cfg,
		updates:  deps.NewInbox[podsource.Update](d.Tasks, "config updates"),
		pleg:     pleg.New(d.Core, d.Runtime, d.RuntimeEvents, cfg.PLEG),
		queue:    podworkers.NewWorkQueue(d.Clock),
		exec: runtimesync.NewExecutor(d.Core, runtimesync.Ports{
			Runtime: d.Runtime, Images: d.Images, Files: d.Files, Events: d.API.Events,
			ConfigMaps: d.API.ConfigMaps, Secrets: d.API.Secrets, Objects: objects, Services: services, RuntimeClasses: d.API.RuntimeClasses,
			ProbeNet: d.ProbeNet, UserNamespaces: usernsPort(users), Devices: devicesPort(devices),
		}, cfg.RuntimeSync),
		expected:  map[types.UID]map[string]expectation{},
		sysctls:   sysctlAllowlist(d, cfg.AllowedUnsafeSysctls),
		cgroups:   pods,
		admitted:  admission.NewAdmitted(),
		rejected:  map[types.UID]admission.Decision{},
		evicted:   map[types.UID]stopNote{},
		alloc:     alloc,
		resources: resources,
		devices:   devices,

		pendingResizes: map[types.UID]bool{},
	}
	a.stats = stats.New(d.Core, stats.Ports{Runtime: d.Runtime, Images: d.Images, Machine: d.Machine, Disk: d.Disk, Pods: admittedPodList{a}, Network: cfg.PodNetwork},
		stats.Config{Period: cfg.Eviction.Period, RootDir: cfg.Node.RootDir, PodLogsRoot: cfg.Node.PodLogsRoot})
	a.images = newImageGC(d, cfg)
	a.logs = logrotate.New(d.Core, d.Runtime, d.Files, cfg.LogRotation)
	ep := eviction.Ports{Stats: a.stats, Pods: evictionPods{a}, Reclaim: reclaimer{a}, Events: d.API.Events, MemoryThreshold: d.MemoryThreshold}
	if cfg.Metrics != nil {
		ep.Metrics = cfg.Metrics
	}
	a.evictions = eviction.New(d.Core, ep, cfg.Eviction, cfg.NodeName, cfg.Node.Allocatable.Memory().Value())
	cfg.NodeStatus.Pressure = a.evictions
	a.shutdown = shutdown.New(d.Core, shutdown.Ports{Notifier: d.Shutdown, Pods: shutdownPods{a}, Status: nodeSyncer{a}, Events: d.API.Events},
		cfg.ShutdownGroups, cfg.NodeName)
	cfg.NodeStatus.Shutdown = a.shutdown
	a.probes = a.newProber()
	var sources []string
	if d.API.Pods != nil {
		sources = append(sources, podsource.SourceAPI)
	}
	if cfg.ManifestDir != "" {
		sources = append(sources, podsource.SourceFile)
	}
	if a.httpSource() {
		sources = append(sources, podsource.SourceHTTP)
	}
	cfg.Volumes.Node = cfg.Node
	a.volumes = volume.New(d.Core, volume.Ports{Files: d.Files, Mounts: d.Mounts, Objects: d.API.Objects(), Cache: objects, Tokens: d.API.Tokens, Claims: d.API.Claims, TrustBundles: d.API.TrustBundles, Events: d.API.Events}, cfg.Volumes)
	a.merger = podsource.NewMerger(d.Core, sources, a.updates)
	a.status = status.NewManager(d.Core, d.API.Pods, a.merger, cfg.Status)
	if d.API.Nodes != nil && d.API.Leases != nil {
		nc := cfg.NodeStatus
		nc.NodeName = cfg.NodeName
		if devices != nil {
			nc.Devices = devices
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
		a.node = nodestatus.New(d.Core, np, nc, plegHealth{a.pleg})
	}
	return a, nil
}

// Start launches the agent's tasks; they stop when ctx ends.
func (a *Agent) Start(ctx context.Context) {
	a.startTime = a.d.Clock.Now()
	a.lastLoop = a.startTime
	a.d.Log.Info("starting agent")
	if a.node != nil {
		a.node.BirthCry()
	}
	wc := podworkers.Config{ResyncInterval: a.cfg.SyncFrequency}
	if a.cfg.Metrics != nil {
		wc.Observer = a.cfg.Metrics
	}
	a.workers = podworkers.New(ctx, a.d.Core, a, a.queue, wc)
	a.startCgroups()
	if a.devices != nil {
		a.devices.Start(ctx)
	}
	a.pleg.Start(ctx)
	a.objects.Start(ctx)
	if a.services != nil {
		a.services.Start(ctx)
	}
	a.volumes.Start(ctx)
	a.probes.Start(ctx)
	a.resources.cpus.Start(ctx, cpuPods{a})
	// Local storage limits are enforced with or without thresholds, as
	// the kubelet's localStorageCapacityIsolation (default true).
	if a.d.Machine != nil {
		a.evictions.Start(ctx)
	}
	if a.d.Machine != nil {
		a.images.Start(ctx)
	}
	if a.d.Files != nil {
		a.logs.Start(ctx)
	}
	oomwatch.Start(ctx, a.d.Core, a.d.OOMKills, a.d.API.Events, a.cfg.NodeName)
	if a.d.API.NodeWatch != nil {
		a.d.Tasks.Go("node watch", func() { a.watchNode(ctx) })
	}
	a.shutdown.Start(ctx)
	if a.node != nil {
		a.node.Start(ctx)
	}
	if a.d.API.Pods != nil {
		a.status.Start(ctx)
		src := podsource.NewAPISource(a.d.Core, a.d.API.Pods, a.cfg.NodeName, a.merger)
		a.d.Tasks.Go("source api", func() { src.Run(ctx) })
	}
	if a.cfg.ManifestDir != "" {
		src := podsource.NewFileSource(a.d.Core, a.d.Files, podsource.FileConfig{
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
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastLoop
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
	if a.node == nil {
		return true, "", ""
	}
	return a.node.Ready()
}

// NodeRegistration says why the Node is not registered yet (nil once it
// is, and without an apiserver).
func (a *Agent) NodeRegistration() error {
	if a.node == nil {
		return nil
	}
	return a.node.RegistrationError()
}

// PLEGHealthy reports the PLEG's health.
func (a *Agent) PLEGHealthy() (bool, error) { return a.pleg.Healthy() }

// SourcesSeen reports whether every pod source delivered its first
// snapshot (a manifest scan, a fetch, an API list).
func (a *Agent) SourcesSeen() bool { return a.merger.AllSeen() }

// Pods returns the pods the agent manages (static pods included), sorted.
func (a *Agent) Pods() []*corev1.Pod { return a.merger.Pods() }

// ProbeWorkers is the number of running probe workers.
func (a *Agent) ProbeWorkers() int { return a.probes.Workers() }

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
		if podutil.IsMirrorPod(pod) {
			continue // the static pod it mirrors is what runs
		}
		switch u.Op {
		case podsource.OpAdd:
			if pod.DeletionTimestamp != nil {
				a.workers.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: pod.UID, Pod: pod, Reason: "deleted"})
				continue
			}
			a.admit(pod)
			a.workers.UpdatePod(podworkers.Work{Type: podworkers.Create, UID: pod.UID, Pod: pod})
		case podsource.OpUpdate:
			a.workers.UpdatePod(podworkers.Work{Type: podworkers.Update, UID: pod.UID, Pod: pod})
		case podsource.OpDelete:
			a.workers.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: pod.UID, Pod: pod, Reason: "deleted"})
			if a.workers.IsFinished(pod.UID) && !podutil.IsStaticPod(pod) {
				// Terminated before the user deleted it (a Job-like pod
				// that finished): its worker has nothing more to do, so
				// the deletion completes here.
				a.deleteIfDeleted(pod.UID)
			}
		case podsource.OpRemove:
			a.workers.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: pod.UID, Pod: pod,
				GracePeriod: removedGrace(u.Source), Reason: "removed from " + u.Source})
		case podsource.OpReconcile:
			// A change the workers need not see (status, resource
			// version): the merger, the one store of desired pods,
			// already holds the new object. Except when another writer
			// changed a readiness gate's condition: the worker must
			// recompute Ready from it.
			if status.NeedsReadinessReconcile(pod) {
				a.workers.UpdatePod(podworkers.Work{Type: podworkers.Update, UID: pod.UID, Pod: pod})
			}
		}
	}
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
		}
	}
}

func (a *Agent) tickLoop(ctx context.Context) {
	t := a.d.Tasks.NewTicker("sync tick", a.cfg.SyncTick)
	defer t.Stop()
	for t.Wait(ctx) == nil {
		a.mu.Lock()
		a.lastLoop = a.d.Clock.Now()
		a.mu.Unlock()
		for _, uid := range a.queue.GetDue() {
			a.workers.Requeue(uid)
		}

	}
}

// Stats is the node's stats sampler: the eviction manager's cycles (or,
// without eviction thresholds, its own loop) keep its latest sample fresh
// for the stats endpoints.
func (a *Agent) Stats() *stats.Provider { return a.stats }
