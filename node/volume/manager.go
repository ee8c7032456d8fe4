// Package volume is the agent's volume manager. Its desired state is the
// volumes of the pods the agent runs (AddPod on every sync of a pod that
// is not terminated, RemovePod once it has terminated); its actual state is
// what is on disk below <root>/pods/<uid>/volumes/<plugin>/<name>, read
// back on every pass, so a restarted agent knows it without memory. A
// reconciler task on the injected clock sets up what is missing and
// refreshes API data volumes (configMap, secret, downwardAPI, projected)
// every ResyncPeriod, and at once when a watched configMap or secret
// changes, through an atomic ..data link swap; it retries failures under a
// per-volume back-off with a FailedMount event each, and tears down the
// directories of terminated pods and of orphans (pods no part of the agent
// knows, found by the housekeeping's CleanupOrphans). A pod's sync waits
// for its volumes with WaitForPod (bounded).
//
// The configMaps and secrets the volumes read are kept by single-object
// watches, reference-counted by pod (node/objcache, shared with the
// containers' environments); projected service
// account tokens come from node/token, renewed once 80 % of their lifetime
// has passed; with an fsGroup, volumes get upstream's ownership
// (plugin/ownership.go). A Secret, a projected or downwardAPI volume and an
// emptyDir of medium Memory are a tmpfs (deps.Mounter; sized by
// sizeLimit), unmounted before the pod's directory is removed; without a
// mounter they are plain directories. A persistentVolumeClaim volume
// bound to a local or hostPath PersistentVolume (claims.go) is a link to
// the PersistentVolume's path, resolved with one GET of the claim and one
// of the volume. Each volume type is a plugin of node/volume/plugin, the
// registry of the types set up; the manager reaches them through
// plugin.For and gives them its ports as a plugin.Host (host.go).
package volume

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/objcache"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/token"
	"github.com/lockstep-dev/lockstep/node/volume/plugin"
)

// Defaults of Config's zero fields.
const (
	DefaultPeriod       = time.Second
	DefaultResyncPeriod = time.Minute
	// DefaultWaitTimeout is how long a pod's sync waits for its volumes
	// (upstream: 2 min 3 s).
	DefaultWaitTimeout = 2*time.Minute + 3*time.Second
)

// ReasonFailedMount is the reason of the Warning events about volumes
// that could not be set up.
const ReasonFailedMount = "FailedMount"

// Config configures a Manager.
type Config struct {
	// Node gives the root directory and the node's facts for downward
	// API values.
	Node podspec.NodeInfo
	// Period is the reconciler's pass period.
	Period time.Duration
	// ResyncPeriod is how often an API data volume's content is read
	// again and republished when it changed.
	ResyncPeriod time.Duration
	// WaitTimeout bounds WaitForPod.
	WaitTimeout time.Duration
	// Backoff is the retry curve of a failing volume (default 500 ms
	// doubling to 2 min 2 s, as upstream's operation back-off).
	Backoff backoff.Config
}

// Manager is the volume manager.
type Manager struct {
	core    deps.Core // for its fault points
	clock   deps.Clock
	tasks   deps.Tasks
	log     *slog.Logger
	files   deps.Files
	mounts  deps.Mounter
	objects deps.ObjectAPI
	claims  deps.ClaimAPI
	// trustBundles reads clusterTrustBundle projections' bundles.
	trustBundles deps.TrustBundleAPI
	watched      *objcache.Cache
	tokens       *token.Manager
	events       deps.EventSink
	cfg          Config
	// host is the plugins' view of the ports above.
	host  *plugin.Host
	wake  deps.Signal
	retry *backoff.Backoff

	mu      sync.Mutex
	desired map[types.UID]*corev1.Pod
	// removable are the pods whose volumes the reconciler tears down,
	// with what else goes (teardownScope).
	removable map[types.UID]teardownScope
	// fresh are the pods added since the last pass over every pod: a wake
	// by AddPod reconciles just them, so admitting N pods costs O(N)
	// reconciles, not O(N²). allDue asks the next pass to cover every
	// pod (a watched object changed); one does at least every Period.
	fresh    map[types.UID]bool
	allDue   bool
	nextFull time.Time
	vols     map[string]*volState // by uid/name
	waiters  map[types.UID]deps.Signal
}

// volState is what the reconciler remembers of one volume: a cache only
// (losing it costs one refresh).
type volState struct {
	refreshed time.Time
	failedAt  time.Time
	err       error
	// podChanged: the pod's labels or annotations changed since the
	// volume was last set up; a volume that may change (downwardAPI,
	// projected, …) is set up again at the next pass, as the kubelet
	// remounts such volumes at every sync of the pod.
	podChanged bool
}

// Ports are the parts of the outside world the volume manager uses.
type Ports struct {
	// Files holds the pod volume directories.
	Files deps.Files
	// Mounts mounts and unmounts tmpfs (secrets, medium Memory).
	Mounts deps.Mounter
	// Objects reads configMaps and secrets; nil: none can be read.
	Objects deps.ObjectAPI
	// Cache keeps the configMaps and secrets the pods reference fresh by
	// single-object watches; the manager takes and drops each pod's
	// references (AddPod, RemovePod) and its owner starts it. nil: they
	// are read at each resync.
	Cache *objcache.Cache
	// Tokens issues the service account tokens of projected volumes; nil:
	// none can be had.
	Tokens deps.TokenAPI
	// Claims reads the claims of persistentVolumeClaim volumes and their
	// PersistentVolumes; nil: such a volume cannot be set up.
	Claims deps.ClaimAPI
	// TrustBundles reads the ClusterTrustBundles of projected
	// clusterTrustBundle sources; nil: such a volume cannot be set up.
	TrustBundles deps.TrustBundleAPI
	// Events records FailedMount; nil records none.
	Events deps.EventSink
}

// New returns a volume manager over ports.
func New(d deps.Core, ports Ports, cfg Config) *Manager {
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = DefaultResyncPeriod
	}
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = DefaultWaitTimeout
	}
	if cfg.Backoff.Initial <= 0 {
		cfg.Backoff.Initial = 500 * time.Millisecond
	}
	if cfg.Backoff.Max <= 0 {
		cfg.Backoff.Max = 2*time.Minute + 2*time.Second
	}
	m := &Manager{
		core: d, clock: d.Clock, tasks: d.Tasks, log: d.Log.With("component", "volumes"), files: ports.Files, mounts: ports.Mounts,
		objects: ports.Objects, claims: ports.Claims, trustBundles: ports.TrustBundles, tokens: token.New(d, ports.Tokens), events: ports.Events, cfg: cfg,
		wake:    d.Tasks.NewSignal("volume reconciler wake"),
		retry:   backoff.New(cfg.Backoff),
		desired: map[types.UID]*corev1.Pod{}, removable: map[types.UID]teardownScope{}, fresh: map[types.UID]bool{},
		vols: map[string]*volState{}, waiters: map[types.UID]deps.Signal{},
	}
	m.watched = ports.Cache
	if m.watched == nil {
		m.watched = objcache.New(d, nil) // holds nothing: every read GETs
	}
	m.host = m.newHost()
	m.watched.OnChange(m.wakeAll)
	return m
}

// wakeAll wakes the reconciler for a pass over every pod.
func (m *Manager) wakeAll() {
	m.mu.Lock()
	m.allDue = true
	m.mu.Unlock()
	m.wake.Notify()
}

// Start runs the reconciler until ctx ends.
func (m *Manager) Start(ctx context.Context) {
	m.tasks.Go("volume reconciler", func() { m.run(ctx) })
}

func (m *Manager) run(ctx context.Context) {
	for ctx.Err() == nil {
		now := m.clock.Now()
		m.mu.Lock()
		all := m.allDue || !now.Before(m.nextFull)
		m.mu.Unlock()
		if all {
			m.Reconcile(ctx)
		} else {
			m.reconcileFresh(ctx)
		}
		m.mu.Lock()
		wait := m.nextFull.Sub(m.clock.Now())
		m.mu.Unlock()
		if wait <= 0 {
			wait = m.cfg.Period
		}
		wctx, cancel := m.clock.WithTimeout(ctx, wait)
		_ = m.wake.Wait(wctx)
		cancel()
	}
}

// AddPod makes (or keeps) pod's volumes desired, with the pod's latest
// labels and annotations for its downwardAPI volumes.
func (m *Manager) AddPod(pod *corev1.Pod) {
	m.mu.Lock()
	old, known := m.desired[pod.UID]
	m.desired[pod.UID] = pod
	delete(m.removable, pod.UID)
	metaChanged := known && !(maps.Equal(old.Labels, pod.Labels) && maps.Equal(old.Annotations, pod.Annotations))
	if metaChanged {
		for i := range pod.Spec.Volumes {
			if st := m.vols[volKey(pod.UID, pod.Spec.Volumes[i].Name)]; st != nil {
				st.podChanged = true
			}
		}
	}
	if !known || metaChanged {
		m.fresh[pod.UID] = true
	}
	if m.waiters[pod.UID] == nil {
		m.waiters[pod.UID] = m.tasks.NewSignal("volumes of pod " + string(pod.UID))
	}
	m.mu.Unlock()
	if !known {
		m.watched.Acquire(pod)
	}
	if !known || metaChanged {
		m.wake.Notify()
	}
}

// teardownScope is what a pod's tear-down removes.
type teardownScope int

const (
	// volumesOnly unmounts and removes the volumes of a pod that ended
	// but is still in the API: its directory (hosts file, termination
	// message files) stays, as the kubelet's does, until the pod is gone;
	// the housekeeping's CleanupOrphans then removes it.
	volumesOnly teardownScope = iota + 1
	// wholePodDir removes the pod's directory with everything in it.
	wholePodDir
)

// RemovePod drops a terminated pod's volumes from the desired state: the
// reconciler tears them down and removes the pod's directory.
func (m *Manager) RemovePod(uid types.UID) { m.remove(uid, wholePodDir) }

// UnmountPod drops the volumes of a pod that ended but stays in the API
// (a completed or failed pod not deleted yet): the reconciler tears them
// down, and the pod's directory keeps the files behind its containers'
// other mounts (/etc/hosts, the termination message) until the pod is
// gone, as the kubelet's does (its pod directories are removed only for
// pods it no longer has, cleanupOrphanedPodDirs).
func (m *Manager) UnmountPod(uid types.UID) { m.remove(uid, volumesOnly) }

func (m *Manager) remove(uid types.UID, scope teardownScope) {
	m.mu.Lock()
	delete(m.desired, uid)
	delete(m.waiters, uid)
	delete(m.fresh, uid)
	m.removable[uid] = max(m.removable[uid], scope)
	m.mu.Unlock()
	m.watched.Release(uid)
	m.wake.Notify()
}

// CleanupOrphans marks for removal the pod directories on disk of pods
// that are neither desired here nor known to the caller (known: a pod
// some part of the agent still has). It is the housekeeping's step, run
// once every pod source has been seen.
func (m *Manager) CleanupOrphans(known func(types.UID) bool) {
	entries, err := m.files.ReadDir(podspec.PodsDir(m.cfg.Node.RootDir))
	if err != nil {
		return // no pods directory yet
	}
	marked := false
	m.mu.Lock()
	for _, e := range entries {
		uid := types.UID(e.Name())
		if !m.isPodDir(e.Name()) {
			continue
		}
		if _, desired := m.desired[uid]; desired || m.removable[uid] != 0 || known(uid) {
			continue
		}
		m.log.Info("orphaned pod directory found", "uid", string(uid))
		m.removable[uid] = wholePodDir
		marked = true
	}
	m.mu.Unlock()
	if marked {
		m.wake.Notify()
	}
}

// isPodDir reports whether an entry of the pods directory is a pod's
// directory as this manager makes them: named by a UID (never with an
// underscore, which pod log directories have, should --pod-logs-dir be
// the same directory) and holding a volumes directory.
func (m *Manager) isPodDir(name string) bool {
	if strings.Contains(name, "_") {
		return false
	}
	info, err := m.files.Stat(podspec.PodVolumesDir(m.cfg.Node.RootDir, types.UID(name)))
	return err == nil && info.IsDir()
}

// AllSetUp reports whether every volume of pod is set up now, without
// waiting (WaitForPod would return at once).
func (m *Manager) AllSetUp(pod *corev1.Pod) bool { return len(m.missing(pod)) == 0 }

// WaitForPod waits until every volume of pod is set up, at most
// WaitTimeout; the error then names the volumes still missing and why.
func (m *Manager) WaitForPod(ctx context.Context, pod *corev1.Pod) error {
	m.mu.Lock()
	sig := m.waiters[pod.UID]
	m.mu.Unlock()
	if sig == nil {
		return fmt.Errorf("volumes of pod %s/%s: the pod was not added", pod.Namespace, pod.Name)
	}
	wctx, cancel := m.clock.WithTimeout(ctx, m.cfg.WaitTimeout)
	defer cancel()
	for {
		missing := m.missing(pod)
		if len(missing) == 0 {
			return nil
		}
		if err := sig.Wait(wctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("unmounted volumes=[%s]: %s", strings.Join(missing, " "), m.causes(pod, missing))
		}
	}
}

// missing lists the pod's volumes not set up, in spec order.
func (m *Manager) missing(pod *corev1.Pod) []string {
	var out []string
	for i := range pod.Spec.Volumes {
		if !m.isSetUp(pod, &pod.Spec.Volumes[i]) {
			out = append(out, pod.Spec.Volumes[i].Name)
		}
	}
	return out
}

// causes describes why the named volumes are not set up.
func (m *Manager) causes(pod *corev1.Pod, names []string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts []string
	for _, n := range names {
		if st := m.vols[volKey(pod.UID, n)]; st != nil && st.err != nil {
			parts = append(parts, fmt.Sprintf("volume %q: %v", n, st.err))
		}
	}
	if len(parts) == 0 {
		return "timed out waiting for the condition"
	}
	return strings.Join(parts, "; ")
}

func volKey(uid types.UID, name string) string { return string(uid) + "/" + name }

// Reconcile runs one pass over every pod: set up or refresh the desired
// pods' volumes, then tear down the pods marked for removal.
func (m *Manager) Reconcile(ctx context.Context) {
	m.mu.Lock()
	desired := make([]*corev1.Pod, 0, len(m.desired))
	for _, uid := range slices.Sorted(maps.Keys(m.desired)) {
		desired = append(desired, m.desired[uid])
	}
	m.allDue, m.fresh = false, map[types.UID]bool{}
	m.nextFull = m.clock.Now().Add(m.cfg.Period)
	m.mu.Unlock()
	m.reconcile(ctx, desired)
}

// reconcileFresh runs a pass over the pods added since the last one and
// the pods marked for removal.
func (m *Manager) reconcileFresh(ctx context.Context) {
	m.mu.Lock()
	var desired []*corev1.Pod
	for _, uid := range slices.Sorted(maps.Keys(m.fresh)) {
		if pod, ok := m.desired[uid]; ok {
			desired = append(desired, pod)
		}
	}
	m.fresh = map[types.UID]bool{}
	m.mu.Unlock()
	m.reconcile(ctx, desired)
}

func (m *Manager) reconcile(ctx context.Context, desired []*corev1.Pod) {
	for _, pod := range desired {
		m.reconcilePod(ctx, pod)
	}
	m.mu.Lock()
	removable := slices.Sorted(maps.Keys(m.removable))
	scopes := make([]teardownScope, len(removable))
	for i, uid := range removable {
		scopes[i] = m.removable[uid]
	}
	m.mu.Unlock()
	for i, uid := range removable {
		m.tearDown(uid, scopes[i])
	}
}

// reconcilePod sets up each of a pod's volumes that is missing or due
// for a refresh, unless it is backing off, and wakes the pod's waiter.
func (m *Manager) reconcilePod(ctx context.Context, pod *corev1.Pod) {
	if _, err := m.files.Stat(podspec.PodDir(m.cfg.Node.RootDir, pod.UID)); err != nil {
		if err := m.files.MkdirAll(podspec.PodVolumesDir(m.cfg.Node.RootDir, pod.UID)); err != nil {
			m.log.Warn("creating a pod's directory failed", "uid", string(pod.UID), "error", err.Error())
			return
		}
	}
	now := m.clock.Now()
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		p, ok := plugin.For(v)
		if !ok {
			continue
		}
		key := volKey(pod.UID, v.Name)
		m.mu.Lock()
		st := m.vols[key]
		if st == nil {
			st = &volState{}
			m.vols[key] = st
		}
		due := st.refreshed.IsZero() || !p.ResolveOnce(v) &&
			(st.podChanged || now.Sub(st.refreshed) >= m.cfg.ResyncPeriod || m.watched.ChangedSince(pod.Namespace, v, st.refreshed))
		backingOff := st.err != nil && m.retry.Remaining(key, time.Time{}, st.failedAt, now) > 0
		m.mu.Unlock()
		if !due && !backingOff && m.core.Fault(deps.FaultVolumeResyncEarly) {
			due = true // set up again, as the periodic resync does
		}
		if backingOff || !due && m.isSetUp(pod, v) {
			continue
		}
		changed, err := m.setUp(ctx, pod, v)
		if err == nil && m.core.Fault(deps.FaultVolumeSetUpFails) {
			changed, err = false, fmt.Errorf("set up volume %q: %w", v.Name, deps.FaultVolumeSetUpFails.Err())
		}
		m.record(pod, v, key, changed, err)
	}
	m.mu.Lock()
	sig := m.waiters[pod.UID]
	m.mu.Unlock()
	if sig != nil {
		sig.Notify()
	}
}

// record remembers how a set-up went, logs it, and on failure sends a
// FailedMount event.
func (m *Manager) record(pod *corev1.Pod, v *corev1.Volume, key string, changed bool, err error) {
	now := m.clock.Now()
	log := m.log.With("pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID), "volume", v.Name)
	m.mu.Lock()
	st := m.vols[key]
	if st == nil {
		st = &volState{}
		m.vols[key] = st
	}
	if err != nil {
		st.err, st.failedAt = err, now
		m.mu.Unlock()
		log.Warn("volume set-up failed", "error", err.Error())
		m.event(pod, corev1.EventTypeWarning, ReasonFailedMount, fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", v.Name, err))
		return
	}
	st.err, st.failedAt, st.refreshed, st.podChanged = nil, time.Time{}, now, false
	m.mu.Unlock()
	m.retry.Forget(key)
	if changed {
		log.Info("volume set up")
	}
}

// tearDown unmounts a terminated or orphaned pod's volumes and removes
// their directory, or with wholePodDir the pod's whole directory, and
// forgets them.
func (m *Manager) tearDown(uid types.UID, scope teardownScope) {
	m.mu.Lock()
	_, desired := m.desired[uid]
	m.mu.Unlock()
	if desired {
		return // wanted again (a pod is never re-added once terminated, but be safe)
	}
	dir := podspec.PodDir(m.cfg.Node.RootDir, uid)
	if scope == volumesOnly {
		dir = podspec.PodVolumesDir(m.cfg.Node.RootDir, uid)
	}
	if err := m.unmountAll(uid); err != nil {
		m.log.Warn("unmounting a pod's volumes failed; will retry", "uid", string(uid), "error", err.Error())
		return
	}
	err := m.files.RemoveAll(dir)
	if err == nil && scope == volumesOnly {
		// An empty volumes directory marks the rest a pod's directory for
		// CleanupOrphans (isPodDir), which removes it once the pod is gone.
		err = m.files.MkdirAll(dir)
	}
	if err != nil {
		m.log.Warn("removing a pod's directory failed; will retry", "uid", string(uid), "error", err.Error())
		return
	}
	m.tokens.Forget(uid)
	m.log.Info("pod volumes torn down", "uid", string(uid))
	m.mu.Lock()
	if m.removable[uid] == scope {
		delete(m.removable, uid) // else widened meanwhile: the next pass
	}
	for k := range m.vols {
		if strings.HasPrefix(k, string(uid)+"/") {
			delete(m.vols, k)
		}
	}
	m.mu.Unlock()
	m.retry.Forget(string(uid) + "/")
}

func (m *Manager) event(pod *corev1.Pod, eventType, reason, msg string) {
	if m.events == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	m.events.Event(ref, eventType, reason, msg)
}
