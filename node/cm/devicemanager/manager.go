// Package devicemanager is the agent's side of device plugins
// (deviceplugin/v1beta1): it registers plugins, follows each one's
// ListAndWatch stream to know its healthy and unhealthy devices, reports
// them as extended resources (capacity: every device; allocatable: the
// healthy ones), admits pods against the free healthy devices, hands
// devices to containers at creation (GetPreferredAllocation, Allocate,
// PreStartContainer) and keeps the allocations in a checkpoint that
// survives agent restarts. Devices are freed when their pod terminates.
//
// The plugins are reached through deps.DevicePlugin (real: gRPC on unix
// sockets in node/real/deviceplugin; sim: in-process fakes). As the
// kubelet's: a registration asks the plugin for its options first and is
// refused when that fails (the plugin is never called again); a plugin
// whose ListAndWatch stream ends, at once or after listing, is stopped:
// its devices turn unhealthy (allocatable 0, capacity kept), it is not
// listened to again until it registers anew, and unless it does within
// Config.Grace its resource is removed (the node shows capacity 0) and
// its devices forgotten.
//
// Where this differs from the kubelet: devices are chosen at container
// creation, not in the admission handler (admission only counts them);
// there is no topology manager, so device topology hints are ignored.
package devicemanager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// DefaultGrace is how long the resource of a disconnected plugin stays in
// the capacity (as unhealthy devices) before it is removed.
const DefaultGrace = 5 * time.Minute

// OptionsTimeout bounds a registering plugin's GetDevicePluginOptions.
const OptionsTimeout = 10 * time.Second

// ReasonUnexpectedAdmissionError is the admission reason of a pod whose
// devices cannot be found, as the kubelet's.
const ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"

// Config configures a Manager.
type Config struct {
	// Dir is the device plugin directory (<root-dir>/device-plugins),
	// where the checkpoint lives; empty keeps no checkpoint.
	Dir string
	// Grace is how long a disconnected plugin's resource is kept
	// (DefaultGrace when 0).
	Grace time.Duration
}

// Ports are what the manager reaches.
type Ports struct {
	// Registry is where plugins register; nil: none ever does.
	Registry deps.DevicePluginRegistry
	// Files keeps the checkpoint; nil keeps none.
	Files deps.Files
}

// endpoint is one resource's plugin and devices.
type endpoint struct {
	plugin deps.DevicePlugin // nil while disconnected
	opts   deps.DevicePluginOptions
	gen    int
	// stop ends the plugin's ListAndWatch (nil without one).
	stop context.CancelFunc
	// devices: id -> healthy.
	devices map[string]bool
	// stoppedAt is when the plugin disconnected (zero while connected).
	stoppedAt time.Time
	// removed: the plugin stayed away past the grace; its devices are
	// forgotten and the resource is reported removed until it registers
	// again.
	removed bool
}

// expired reports whether ep's resource is removed at now.
func (m *Manager) expired(ep *endpoint, now time.Time) bool {
	return ep.removed || (!ep.stoppedAt.IsZero() && now.Sub(ep.stoppedAt) >= m.cfg.Grace)
}

// containerDevices are one container's devices of one resource.
type containerDevices struct {
	ids  []string
	resp deps.DeviceAllocation
}

// Manager tracks device plugins and their devices' allocations.
type Manager struct {
	d     deps.Core
	ports Ports
	cfg   Config

	mu  sync.Mutex
	gen int
	res map[string]*endpoint
	// alloc: pod -> container -> resource -> devices.
	alloc map[types.UID]map[string]map[string]containerDevices
}

// New returns a manager with the allocations and devices of the
// checkpoint in cfg.Dir (devices unhealthy until their plugin registers
// again). A checkpoint that cannot be read is logged and ignored.
func New(d deps.Core, ports Ports, cfg Config) *Manager {
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	m := &Manager{d: d, ports: ports, cfg: cfg, res: map[string]*endpoint{},
		alloc: map[types.UID]map[string]map[string]containerDevices{}}
	m.restore()
	return m
}

func (m *Manager) restore() {
	if m.ports.Files == nil || m.cfg.Dir == "" {
		return
	}
	data, err := readCheckpoint(m.ports.Files, m.cfg.Dir)
	if err != nil {
		m.d.Log.Warn("device checkpoint ignored", "error", err.Error())
		return
	}
	now := m.d.Clock.Now()
	for _, name := range slices.Sorted(maps.Keys(data.RegisteredDevices)) {
		ep := &endpoint{devices: map[string]bool{}, stoppedAt: now}
		for _, id := range data.RegisteredDevices[name] {
			ep.devices[id] = false
		}
		m.res[name] = ep
		m.expireLater(name, 0)
	}
	for _, e := range data.PodDeviceEntries {
		m.set(types.UID(e.PodUID), e.ContainerName, e.ResourceName, containerDevices{ids: e.DeviceIDs, resp: e.AllocResp})
	}
}

// set records a container's devices; m.mu held.
func (m *Manager) set(uid types.UID, container, res string, cd containerDevices) {
	if m.alloc[uid] == nil {
		m.alloc[uid] = map[string]map[string]containerDevices{}
	}
	if m.alloc[uid][container] == nil {
		m.alloc[uid][container] = map[string]containerDevices{}
	}
	m.alloc[uid][container][res] = cd
}

// Start serves registrations until ctx ends.
func (m *Manager) Start(ctx context.Context) {
	if m.ports.Registry == nil {
		return
	}
	m.d.Tasks.Go("device plugin registration", func() {
		for {
			req, plugin, answer, err := m.ports.Registry.Next(ctx)
			if err != nil {
				if ctx.Err() == nil {
					m.d.Log.Warn("device plugin registry failed", "error", err.Error())
				}
				return
			}
			answer(m.Register(ctx, req, plugin))
		}
	})
}

// Register validates req, asks the plugin for its options (refusing it
// when that fails, as the kubelet: "failed to get device plugin options")
// and, when it is acceptable, starts following the plugin's device list
// in a task of its own. A plugin registering a resource that already has
// one replaces it. The options are the plugin's answer, not req's.
func (m *Manager) Register(ctx context.Context, req deps.DeviceRegistration, plugin deps.DevicePlugin) error {
	if req.Version != deps.DevicePluginVersion {
		err := fmt.Errorf("register device plugin for %q: version %q is not supported, want %s", req.ResourceName, req.Version, deps.DevicePluginVersion)
		m.d.Log.Warn("device plugin refused", "resource", req.ResourceName, "error", err.Error())
		return err
	}
	if err := validResourceName(req.ResourceName); err != nil {
		m.d.Log.Warn("device plugin refused", "resource", req.ResourceName, "error", err.Error())
		return fmt.Errorf("register device plugin: %w", err)
	}
	octx, cancel := m.d.Clock.WithTimeout(ctx, OptionsTimeout)
	opts, err := plugin.GetDevicePluginOptions(octx)
	cancel()
	if err != nil {
		err = fmt.Errorf("register device plugin %q: failed to get device plugin options: %w", req.ResourceName, err)
		m.d.Log.Warn("device plugin refused", "resource", req.ResourceName, "error", err.Error())
		return err
	}
	wctx, stop := m.d.Tasks.WithCancel(ctx)
	m.mu.Lock()
	m.gen++
	gen := m.gen
	ep := m.res[req.ResourceName]
	if ep == nil || ep.removed {
		// A resource removed past its grace starts afresh, as upstream
		// forgot it: no devices until the plugin lists them.
		ep = &endpoint{devices: map[string]bool{}}
		m.res[req.ResourceName] = ep
	}
	old := ep.stop
	ep.plugin, ep.opts, ep.gen, ep.stoppedAt, ep.stop = plugin, opts, gen, time.Time{}, stop
	m.mu.Unlock()
	if old != nil {
		old() // the plugin registered anew: its old stream is done
	}
	m.d.Log.Info("device plugin registered", "resource", req.ResourceName)
	// The resource is a device resource from now on, across restarts,
	// even if its plugin dies before it lists a device.
	m.checkpoint()
	name := req.ResourceName
	m.d.Tasks.Go("device plugin "+name, func() {
		err := m.listAndWatch(wctx, name, gen, plugin)
		m.disconnected(name, gen, err)
		stop()
	})
	return nil
}

// listAndWatch follows plugin's stream once: when it ends the plugin is
// stopped, and never listened to again (upstream does not re-dial; the
// plugin must register anew).
func (m *Manager) listAndWatch(ctx context.Context, name string, gen int, plugin deps.DevicePlugin) error {
	for {
		err := plugin.ListAndWatch(ctx, func(devs []deps.Device) { m.update(name, gen, devs) })
		if !teethRelistAfterStreamEnd || ctx.Err() != nil {
			return err
		}
		if err := m.d.Tasks.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// update replaces the device list of resource name, if gen is still its
// plugin.
func (m *Manager) update(name string, gen int, devs []deps.Device) {
	m.mu.Lock()
	ep := m.res[name]
	if ep == nil || ep.gen != gen {
		m.mu.Unlock()
		return
	}
	ep.devices = make(map[string]bool, len(devs))
	for _, d := range devs {
		ep.devices[d.ID] = d.Healthy
	}
	m.mu.Unlock()
	m.d.Log.Info("device plugin devices", "resource", name, "devices", len(devs))
	m.checkpoint()
}

// disconnected marks the devices of resource name unhealthy, if gen is
// still its plugin.
func (m *Manager) disconnected(name string, gen int, err error) {
	m.mu.Lock()
	ep := m.res[name]
	if ep == nil || ep.gen != gen {
		m.mu.Unlock()
		return
	}
	ep.plugin, ep.stoppedAt = nil, m.d.Clock.Now()
	for id := range ep.devices {
		ep.devices[id] = false
	}
	m.mu.Unlock()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	m.d.Log.Warn("device plugin disconnected; its devices are unhealthy", "resource", name, "error", msg)
	m.expireLater(name, gen)
}

// expireLater removes resource name once the grace has passed, if its
// plugin (gen) has not registered again by then.
func (m *Manager) expireLater(name string, gen int) {
	m.d.Tasks.AfterFunc("device plugin grace "+name, m.cfg.Grace, func() {
		m.mu.Lock()
		ep := m.res[name]
		if ep == nil || ep.gen != gen || ep.stoppedAt.IsZero() || ep.removed {
			m.mu.Unlock()
			return
		}
		ep.removed, ep.devices = true, map[string]bool{}
		m.mu.Unlock()
		m.d.Log.Info("device plugin resource removed after its grace", "resource", name)
		m.checkpoint()
	})
}

// Resources returns the extended resources of the devices: capacity
// counts every device, allocatable the healthy ones; removed are the
// resources whose plugin has been gone longer than the grace, which the
// node status shows with capacity and allocatable 0 (as upstream, so that
// they read as device plugin resources; until their plugin registers
// again). It changes nothing, so any number of readers may call it.
func (m *Manager) Resources() (capacity, allocatable corev1.ResourceList, removed []corev1.ResourceName) {
	now := m.d.Clock.Now()
	capacity, allocatable = corev1.ResourceList{}, corev1.ResourceList{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(m.res)) {
		ep := m.res[name]
		if m.expired(ep, now) {
			removed = append(removed, corev1.ResourceName(name))
			continue
		}
		healthy := 0
		for _, h := range ep.devices {
			if h {
				healthy++
			}
		}
		capacity[corev1.ResourceName(name)] = *resource.NewQuantity(int64(len(ep.devices)), resource.DecimalSI)
		allocatable[corev1.ResourceName(name)] = *resource.NewQuantity(int64(healthy), resource.DecimalSI)
	}
	return capacity, allocatable, removed
}

// AdmissionAllocatable is what admission counts of each device resource
// the manager knows: the healthy devices plus those allocated to pods
// whatever their health or whether its plugin listed them since the
// manager started (their pods' requests are counted as used beside it), so that a pod already holding its devices is admitted again after
// an agent restart, before its plugin has registered again, while a new
// pod is not. A resource past its grace, or only known from the devices
// pods hold (a restart forgot its plugin), counts those held devices
// alone, as upstream raises the node's allocatable to the devices
// allocated (sanitizeNodeAllocatable); one it does not know at all is
// left to the Node's own allocatable.
func (m *Manager) AdmissionAllocatable() corev1.ResourceList {
	now := m.d.Clock.Now()
	out := corev1.ResourceList{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range m.allocatedResources() {
		if !m.known(name, now) {
			out[corev1.ResourceName(name)] = *resource.NewQuantity(int64(len(m.taken(name, ""))), resource.DecimalSI)
		}
	}
	for name, ep := range m.res {
		if m.expired(ep, now) {
			if _, held := out[corev1.ResourceName(name)]; !held {
				out[corev1.ResourceName(name)] = *resource.NewQuantity(0, resource.DecimalSI)
			}
			continue
		}
		// The devices pods hold count whether or not the plugin listed
		// them in this life of the manager: one registered again whose
		// stream failed at once has listed none.
		counted := m.taken(name, "")
		for id, h := range ep.devices {
			if h {
				counted[id] = true
			}
		}
		out[corev1.ResourceName(name)] = *resource.NewQuantity(int64(len(counted)), resource.DecimalSI)
	}
	return out
}

// known reports whether resource name has a plugin the manager follows
// (connected or within its grace); m.mu held.
func (m *Manager) known(name string, now time.Time) bool {
	ep := m.res[name]
	return ep != nil && !m.expired(ep, now)
}

// allocatedResources are the resources some pod holds devices of, sorted;
// m.mu held.
func (m *Manager) allocatedResources() []string {
	set := map[string]bool{}
	for _, byC := range m.alloc {
		for _, byRes := range byC {
			for r := range byRes {
				set[r] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// isDeviceResource reports whether r is a device plugin resource to
// admission, as upstream's isDevicePluginResource: a plugin the manager
// follows offers it, or some pod holds devices of it; m.mu held. Another
// extended resource is the node's to account, not the manager's.
func (m *Manager) isDeviceResource(r string, now time.Time) bool {
	return m.known(r, now) || slices.Contains(m.allocatedResources(), r)
}

// requests is what c asks of each device resource: a resource a plugin
// registered in this life of the manager (even one past its grace, whose
// devices are gone) or one some pod holds devices of.
func (m *Manager) requests(c *corev1.Container) map[string]int {
	out := map[string]int{}
	var allocated []string
	for name, q := range c.Resources.Limits {
		if q.Value() <= 0 {
			continue
		}
		if _, ok := m.res[string(name)]; !ok {
			if allocated == nil {
				allocated = m.allocatedResources()
			}
			if !slices.Contains(allocated, string(name)) {
				continue
			}
		}
		out[string(name)] = int(q.Value())
	}
	return out
}

// podNeeds is what pod needs of each device resource: the larger of its
// largest init container and the sum of its other containers (init
// containers' devices are handed on to later containers).
func (m *Manager) podNeeds(pod *corev1.Pod) map[string]int {
	sum, initMax := map[string]int{}, map[string]int{}
	for i := range pod.Spec.InitContainers {
		for r, n := range m.requests(&pod.Spec.InitContainers[i]) {
			initMax[r] = max(initMax[r], n)
		}
	}
	for i := range pod.Spec.Containers {
		for r, n := range m.requests(&pod.Spec.Containers[i]) {
			sum[r] += n
		}
	}
	for r, n := range initMax {
		sum[r] = max(sum[r], n)
	}
	return sum
}

// held is, per resource, the devices allocated to pod uid; m.mu held.
func (m *Manager) held(uid types.UID) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, byRes := range m.alloc[uid] {
		for r, cd := range byRes {
			if out[r] == nil {
				out[r] = map[string]bool{}
			}
			for _, id := range cd.ids {
				out[r][id] = true
			}
		}
	}
	return out
}

// Admit checks, as upstream's device manager does when it allocates at
// admission (devicesToAllocate), each device resource the pod still
// needs: one no plugin offers (only pods' held devices make it a device
// resource: its plugin was removed past its grace, or a restart forgot
// it) is "cannot allocate unregistered device"; one whose plugin has no
// healthy device (stopped, or not registered again since a restart) is
// "no healthy devices present"; otherwise the free healthy devices,
// beside the pods active returns (the other pods that may still run,
// whose needs not yet allocated are reserved; asked only when pod needs a
// device, so that admitting the pods that need none costs no list of
// every pod), must cover it. A refusal is the kubelet's
// UnexpectedAdmissionError with its message. A resource that is no
// device plugin's is not the manager's to refuse: the node's allocatable
// decides (admission.Fits). A pod already holding its devices needs none.
func (m *Manager) Admit(pod *corev1.Pod, active func() []*corev1.Pod) (reason, message string, ok bool) {
	now := m.d.Clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	needs := m.podNeeds(pod)
	var others []*corev1.Pod
	for _, r := range slices.Sorted(maps.Keys(needs)) {
		want := needs[r] - len(m.held(pod.UID)[r])
		if want <= 0 || !m.isDeviceResource(r, now) {
			continue
		}
		if !m.known(r, now) {
			return refuse("cannot allocate unregistered device %s", r)
		}
		taken := m.taken(r, pod.UID)
		healthy, free := 0, 0
		for id, h := range m.res[r].devices {
			if h {
				healthy++
				if !taken[id] {
					free++
				}
			}
		}
		if healthy == 0 {
			return refuse("no healthy devices present; cannot allocate unhealthy devices %s", r)
		}
		if others == nil && active != nil {
			others = active()
		}
		for _, p := range others {
			if p.UID != pod.UID {
				free -= max(0, m.podNeeds(p)[r]-len(m.held(p.UID)[r]))
			}
		}
		if free < want {
			return refuse("requested number of devices unavailable for %s. Requested: %d, Available: %d", r, want, max(free, 0))
		}
	}
	return "", "", true
}

// refuse is the kubelet's admission refusal for an allocation error.
func refuse(format string, args ...any) (reason, message string, ok bool) {
	return ReasonUnexpectedAdmissionError, "Allocate failed due to " + fmt.Sprintf(format, args...) + ", which is unexpected", false
}

// taken are the devices of resource r allocated to pods other than
// except; m.mu held.
func (m *Manager) taken(r string, except types.UID) map[string]bool {
	out := map[string]bool{}
	for uid := range m.alloc {
		if uid == except {
			continue
		}
		for id := range m.held(uid)[r] {
			out[id] = true
		}
	}
	return out
}

// Allocate gives container c of pod its devices, the same ones for every
// instance of it (the first allocation is kept, and checkpointed), calls
// PreStartContainer where the plugin asked for it, and returns what the
// container config must hold; nil when c uses no devices.
func (m *Manager) Allocate(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (*deps.DeviceAllocation, error) {
	m.mu.Lock()
	reqs := m.requests(c)
	m.mu.Unlock()
	if len(reqs) == 0 {
		return nil, nil
	}
	out := &deps.DeviceAllocation{}
	for _, r := range slices.Sorted(maps.Keys(reqs)) {
		cd, err := m.allocateResource(ctx, pod, c, r, reqs[r])
		if err != nil {
			return nil, fmt.Errorf("devices %s for container %q of pod %s/%s: %w", r, c.Name, pod.Namespace, pod.Name, err)
		}
		merge(out, cd.resp)
	}
	return out, nil
}

func (m *Manager) allocateResource(ctx context.Context, pod *corev1.Pod, c *corev1.Container, r string, n int) (containerDevices, error) {
	m.mu.Lock()
	ep := m.res[r]
	if ep == nil {
		m.mu.Unlock()
		return containerDevices{}, fmt.Errorf("no device plugin for %s", r)
	}
	cd, have := m.alloc[pod.UID][c.Name][r]
	plugin, opts := ep.plugin, ep.opts
	var avail, reuse []string
	if !have {
		taken := m.taken(r, pod.UID)
		mine := m.held(pod.UID)[r]
		for id, h := range ep.devices {
			if h && !taken[id] {
				if mine[id] {
					reuse = append(reuse, id)
				} else {
					avail = append(avail, id)
				}
			}
		}
		// Devices of this pod's own other containers are free to take only
		// when they were an init container's.
		reuse = m.initDevices(pod, r, reuse)
	}
	m.mu.Unlock()
	if have && !opts.PreStartRequired {
		return cd, nil // a new instance of the container: same devices
	}
	if plugin == nil {
		return containerDevices{}, fmt.Errorf("device plugin of %s is not connected", r)
	}
	if have {
		return cd, m.preStart(ctx, plugin, opts, cd.ids)
	}
	sort.Strings(avail)
	sort.Strings(reuse)
	pool := append(slices.Clone(reuse), avail...)
	if len(pool) < n {
		return containerDevices{}, fmt.Errorf("requested %d devices, %d healthy and free", n, len(pool))
	}
	ids := pool[:n]
	if opts.GetPreferredAllocationAvailable {
		pref, err := plugin.GetPreferredAllocation(ctx, pool, nil, n)
		if err != nil {
			return containerDevices{}, fmt.Errorf("preferred allocation: %w", err)
		}
		if subset(pref, pool) && len(pref) == n {
			ids = pref
		}
	}
	ids = slices.Sorted(slices.Values(ids))
	resp, err := plugin.Allocate(ctx, ids)
	if err != nil {
		return containerDevices{}, fmt.Errorf("allocate %v: %w", ids, err)
	}
	cd = containerDevices{ids: ids, resp: resp}
	m.mu.Lock()
	// The devices may have been taken meanwhile by another container.
	taken := m.taken(r, pod.UID)
	for _, id := range ids {
		if taken[id] {
			m.mu.Unlock()
			return containerDevices{}, fmt.Errorf("device %s was allocated to another pod meanwhile", id)
		}
	}
	m.set(pod.UID, c.Name, r, cd)
	m.mu.Unlock()
	m.d.Log.Info("devices allocated", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "resource", r, "devices", strings.Join(ids, ","))
	m.checkpoint()
	return cd, m.preStart(ctx, plugin, opts, ids)
}

// initDevices keeps of ids those allocated to pod's init containers (a
// sidecar's are its own for the pod's life); m.mu held.
func (m *Manager) initDevices(pod *corev1.Pod, r string, ids []string) []string {
	inits := map[string]bool{}
	for i := range pod.Spec.InitContainers {
		if ic := &pod.Spec.InitContainers[i]; !podutil.IsSidecar(ic) {
			inits[ic.Name] = true
		}
	}
	free := map[string]bool{}
	for name, byRes := range m.alloc[pod.UID] {
		if inits[name] {
			for _, id := range byRes[r].ids {
				free[id] = true
			}
		}
	}
	for name, byRes := range m.alloc[pod.UID] {
		if !inits[name] {
			for _, id := range byRes[r].ids {
				delete(free, id)
			}
		}
	}
	var out []string
	for _, id := range ids {
		if free[id] {
			out = append(out, id)
		}
	}
	return out
}

func (m *Manager) preStart(ctx context.Context, plugin deps.DevicePlugin, opts deps.DevicePluginOptions, ids []string) error {
	if !opts.PreStartRequired {
		return nil
	}
	if err := plugin.PreStartContainer(ctx, ids); err != nil {
		return fmt.Errorf("pre-start %v: %w", ids, err)
	}
	return nil
}

func subset(a, of []string) bool {
	for _, x := range a {
		if !slices.Contains(of, x) {
			return false
		}
	}
	return true
}

// merge adds b's config to a.
func merge(a *deps.DeviceAllocation, b deps.DeviceAllocation) {
	if len(b.Envs) > 0 && a.Envs == nil {
		a.Envs = map[string]string{}
	}
	maps.Copy(a.Envs, b.Envs)
	if len(b.Annotations) > 0 && a.Annotations == nil {
		a.Annotations = map[string]string{}
	}
	maps.Copy(a.Annotations, b.Annotations)
	a.Mounts = append(a.Mounts, b.Mounts...)
	a.Devices = append(a.Devices, b.Devices...)
	a.CDIDevices = append(a.CDIDevices, b.CDIDevices...)
}

// Free forgets the devices of pod uid (it terminated).
func (m *Manager) Free(uid types.UID) {
	m.mu.Lock()
	_, had := m.alloc[uid]
	delete(m.alloc, uid)
	m.mu.Unlock()
	if had {
		m.checkpoint()
	}
}

// FreeOrphans forgets the devices of the pods mayRun says can no longer
// run (after a restart, pods deleted meanwhile), returning them.
func (m *Manager) FreeOrphans(mayRun func(types.UID) bool) []types.UID {
	m.mu.Lock()
	var gone []types.UID
	for uid := range m.alloc {
		if !mayRun(uid) {
			gone = append(gone, uid)
		}
	}
	for _, uid := range gone {
		delete(m.alloc, uid)
	}
	m.mu.Unlock()
	if len(gone) > 0 {
		m.checkpoint()
	}
	slices.Sort(gone)
	return gone
}

// Allocated returns, for pod uid, container -> resource -> device ids
// (for tests and invariants).
func (m *Manager) Allocated(uid types.UID) map[string]map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]map[string][]string{}
	for c, byRes := range m.alloc[uid] {
		out[c] = map[string][]string{}
		for r, cd := range byRes {
			out[c][r] = slices.Clone(cd.ids)
		}
	}
	return out
}

// checkpoint writes the allocations and registered devices.
func (m *Manager) checkpoint() {
	if m.ports.Files == nil || m.cfg.Dir == "" {
		return
	}
	m.mu.Lock()
	data := checkpointData{RegisteredDevices: map[string][]string{}}
	for name, ep := range m.res {
		if !ep.removed { // a removed resource does not come back at a restart
			data.RegisteredDevices[name] = slices.Sorted(maps.Keys(ep.devices))
		}
	}
	for _, uid := range slices.Sorted(maps.Keys(m.alloc)) {
		for _, c := range slices.Sorted(maps.Keys(m.alloc[uid])) {
			for _, r := range slices.Sorted(maps.Keys(m.alloc[uid][c])) {
				cd := m.alloc[uid][c][r]
				data.PodDeviceEntries = append(data.PodDeviceEntries, podDevicesEntry{
					PodUID: string(uid), ContainerName: c, ResourceName: r, DeviceIDs: cd.ids, AllocResp: cd.resp})
			}
		}
	}
	m.mu.Unlock()
	if err := writeCheckpoint(m.ports.Files, m.cfg.Dir, data); err != nil {
		m.d.Log.Warn("device checkpoint not written", "error", err.Error())
	}
}
