package cgroups

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Config is the node's cgroup configuration (kubelet flags of the same
// names).
type Config struct {
	// CgroupsPerQOS builds the kubepods hierarchy (--cgroups-per-qos);
	// false leaves pods where the runtime puts them.
	CgroupsPerQOS bool
	// Root is the cgroup kubepods goes under (--cgroup-root, "/").
	Root string
	// Driver names and creates cgroups (--cgroup-driver).
	Driver Driver
	// EnforcePods limits kubepods to the node's allocatable resources
	// (--enforce-node-allocatable=pods); otherwise to its capacity.
	EnforcePods bool
	// MemoryReservePercent reserves that percentage of the memory
	// requests of higher QoS classes away from lower ones
	// (--qos-reserved=memory=N%); 0 sets no QoS memory limits.
	MemoryReservePercent int64
}

// Node is what the machine says about the node, read once.
type Node struct {
	// Capacity and Allocatable are the node's (allocatable: capacity less
	// kube and system reserved).
	Capacity, Allocatable corev1.ResourceList
	// HugePageSizes are the node's huge page sizes in bytes.
	HugePageSizes []uint64
}

// The node event the kubelet's container manager sends once it has set
// kubepods up to the node's allocatable resources.
const (
	ReasonNodeAllocatableEnforced  = "NodeAllocatableEnforced"
	MessageNodeAllocatableEnforced = "Updated Node Allocatable limit across pods"
)

// Manager keeps the kubepods hierarchy in step with the pods: the QoS
// cgroups, one cgroup per pod, their limits, and the removal of pod
// cgroups whose pods are gone. A nil Manager, or one whose Config has
// CgroupsPerQOS off, does nothing and gives pods no cgroup parent.
type Manager struct {
	core deps.Core
	port deps.Cgroups
	cfg  Config
	node Node

	// onStarted, when set, is called once kubepods is first set up.
	onStarted func()

	mu      sync.Mutex
	started bool
	// ensured are the pod cgroups this agent created or updated, by UID,
	// and written what it last wrote to each.
	ensured map[types.UID]string
	written map[types.UID]deps.CgroupResources
	// lastQOS is what the QoS cgroups were last given.
	lastQOS map[corev1.PodQOSClass]deps.CgroupResources
}

// New returns a manager over port; port nil turns it off.
func New(core deps.Core, port deps.Cgroups, cfg Config, node Node) *Manager {
	if cfg.Driver == "" {
		cfg.Driver = DriverCgroupfs
	}
	if port == nil {
		cfg.CgroupsPerQOS = false
	}
	return &Manager{core: core, port: port, cfg: cfg, node: node, ensured: map[types.UID]string{}, written: map[types.UID]deps.CgroupResources{}}
}

// Enabled reports whether the manager builds pod cgroups.
func (m *Manager) Enabled() bool { return m != nil && m.cfg.CgroupsPerQOS }

// Config returns the manager's configuration.
func (m *Manager) Config() Config { return m.cfg }

// OnStarted sets fn to be called once, when Start first sets kubepods
// up (the kubelet's NodeAllocatableEnforced event). Call it before Start.
func (m *Manager) OnStarted(fn func()) {
	if m != nil {
		m.onStarted = fn
	}
}

// Start creates (or updates) kubepods, limited to the node's allocatable
// resources or capacity, and the Burstable and BestEffort cgroups
// (BestEffort at 2 shares; Burstable's shares wait for the pods, as the
// first EnsurePod or UpdateQOS sets them). Once it has succeeded it does
// nothing; after a failure it tries again.
func (m *Manager) Start() error {
	if !m.Enabled() {
		return nil
	}
	first, err := m.start()
	if first && m.onStarted != nil {
		m.onStarted()
	}
	return err
}

// start is Start under the lock; it reports whether this call set the
// hierarchy up.
func (m *Manager) start() (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return false, nil
	}
	rl := m.node.Capacity
	if m.cfg.EnforcePods {
		rl = m.node.Allocatable
	}
	kubepods := m.cfg.Kubepods().Path(m.cfg.Driver)
	if err := m.port.Ensure(kubepods, KubepodsResources(rl)); err != nil {
		return false, fmt.Errorf("create cgroup %s: %w", kubepods, err)
	}
	minShares := uint64(MinShares)
	for _, q := range []struct {
		qos corev1.PodQOSClass
		r   deps.CgroupResources
	}{{corev1.PodQOSBurstable, deps.CgroupResources{}}, {corev1.PodQOSBestEffort, deps.CgroupResources{CPUShares: &minShares}}} {
		qos, path := q.qos, m.cfg.QOSParent(q.qos).Path(m.cfg.Driver)
		if err := m.port.Ensure(path, q.r); err != nil {
			return false, fmt.Errorf("create %s QoS cgroup %s: %w", qos, path, err)
		}
	}
	m.started = true
	return true, nil
}

// CgroupParent is the cgroup parent of the pod's sandbox (and so of its
// containers): its pod cgroup in cgroupfs form, "" when the manager is
// off.
func (m *Manager) CgroupParent(pod *corev1.Pod, qos corev1.PodQOSClass) string {
	if !m.Enabled() {
		return ""
	}
	return m.cfg.PodName(pod.UID, qos).Path(m.cfg.Driver)
}

// EnsurePod makes sure the pod's cgroup exists with its limits before its
// sandbox is created: the first time for a pod (in this agent's life) it
// updates the QoS cgroups for active (the pods admitted and not yet
// terminated, this one included) and writes the pod's cgroup.
func (m *Manager) EnsurePod(pod *corev1.Pod, qos corev1.PodQOSClass, active func() []*corev1.Pod) error {
	if !m.Enabled() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.started {
		return errors.New("the kubepods cgroup is not set up yet")
	}
	path := m.cfg.PodName(pod.UID, qos).Path(m.cfg.Driver)
	if m.ensured[pod.UID] == path {
		return nil
	}
	if err := m.updateQOSLocked(active()); err != nil {
		m.core.Log.Warn("updating the QoS cgroups failed", "error", err.Error())
	}
	r := PodResources(pod)
	if err := m.port.Ensure(path, r); err != nil {
		return fmt.Errorf("create cgroup %s of pod %s/%s: %w", path, pod.Namespace, pod.Name, err)
	}
	m.ensured[pod.UID] = path
	m.written[pod.UID] = r
	return nil
}

// GrowPod is the first half of a pod's resize: the pod cgroup's limits
// that pod (carrying its new allocation) raises are raised now, before
// its containers grow, while those it lowers stay until SetPod, after
// its containers shrank (the kubelet's order). It does nothing for a pod
// whose cgroup this agent has not ensured.
func (m *Manager) GrowPod(pod *corev1.Pod, qos corev1.PodQOSClass) error {
	return m.resizePod(pod, qos, true)
}

// SetPod gives the pod cgroup pod's resources (the end of a resize).
func (m *Manager) SetPod(pod *corev1.Pod, qos corev1.PodQOSClass) error {
	return m.resizePod(pod, qos, false)
}

func (m *Manager) resizePod(pod *corev1.Pod, qos corev1.PodQOSClass, grow bool) error {
	if !m.Enabled() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	path := m.cfg.PodName(pod.UID, qos).Path(m.cfg.Driver)
	old, ok := m.written[pod.UID]
	if !ok || m.ensured[pod.UID] != path {
		return nil
	}
	want := PodResources(pod)
	if grow {
		want = Widest(old, want)
	}
	if reflect.DeepEqual(old, want) {
		return nil
	}
	if err := m.port.Ensure(path, want); err != nil {
		return fmt.Errorf("resize cgroup %s of pod %s/%s: %w", path, pod.Namespace, pod.Name, err)
	}
	m.written[pod.UID] = want
	return nil
}

// Widest is, field by field, the larger of two pod cgroup settings (no
// limit being the largest): what a pod cgroup holds while its containers
// move from one to the other.
func Widest(a, b deps.CgroupResources) deps.CgroupResources {
	out := b
	if a.CPUShares != nil && (b.CPUShares == nil || *a.CPUShares > *b.CPUShares) {
		out.CPUShares = a.CPUShares
	}
	unlimited := func(p *int64) bool { return p == nil || *p <= 0 }
	if unlimited(a.CPUQuota) || !unlimited(b.CPUQuota) && *a.CPUQuota > *b.CPUQuota {
		out.CPUQuota = a.CPUQuota
	}
	if unlimited(a.Memory) || !unlimited(b.Memory) && *a.Memory > *b.Memory {
		out.Memory = a.Memory
	}
	return out
}

// UpdateQOS sets the QoS cgroups' limits for the active pods, when they
// changed since the last write.
func (m *Manager) UpdateQOS(active []*corev1.Pod) error {
	if !m.Enabled() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.started {
		return nil
	}
	return m.updateQOSLocked(active)
}

func (m *Manager) updateQOSLocked(active []*corev1.Pod) error {
	want := QOSResources(active, m.node.Allocatable.Memory().Value(), m.cfg.MemoryReservePercent, m.node.HugePageSizes)
	if reflect.DeepEqual(want, m.lastQOS) {
		return nil
	}
	for _, qos := range []corev1.PodQOSClass{corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		path := m.cfg.QOSParent(qos).Path(m.cfg.Driver)
		if err := m.port.Ensure(path, want[qos]); err != nil {
			m.lastQOS = nil
			return fmt.Errorf("update %s QoS cgroup %s: %w", qos, path, err)
		}
	}
	m.lastQOS = want
	return nil
}

// RemovePod removes the pod's cgroup (under whichever QoS parent it is):
// its containers must have stopped.
func (m *Manager) RemovePod(uid types.UID) error {
	if !m.Enabled() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.removeLocked(uid)
}

func (m *Manager) removeLocked(uid types.UID) error {
	for _, qos := range []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		path := m.cfg.PodName(uid, qos).Path(m.cfg.Driver)
		if err := m.port.Remove(path); err != nil {
			return fmt.Errorf("remove cgroup %s of pod %s: %w", path, uid, err)
		}
	}
	delete(m.ensured, uid)
	delete(m.written, uid)
	return nil
}

// PodCgroups lists the pod cgroups in the tree, by pod UID.
func (m *Manager) PodCgroups() (map[types.UID]string, error) {
	out := map[types.UID]string{}
	if !m.Enabled() {
		return out, nil
	}
	for _, qos := range []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		parent := m.cfg.QOSParent(qos)
		children, err := m.port.List(parent.Path(m.cfg.Driver))
		if err != nil {
			return nil, fmt.Errorf("list cgroup %s: %w", parent.Path(m.cfg.Driver), err)
		}
		for _, c := range children {
			if uid, ok := m.cfg.PodUID(c); ok {
				out[uid] = m.cfg.PodName(uid, qos).Path(m.cfg.Driver)
			}
		}
	}
	return out, nil
}

// RemoveOrphans removes the cgroups of pods that may not run any more:
// those for which keep is false (the caller keeps every pod a source
// wants, a worker owns or the runtime still runs). It returns the UIDs
// whose cgroups it removed.
func (m *Manager) RemoveOrphans(keep func(types.UID) bool) ([]types.UID, error) {
	if !m.Enabled() {
		return nil, nil
	}
	found, err := m.PodCgroups()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var removed []types.UID
	var errs []error
	for _, uid := range sortedUIDs(found) {
		if keep(uid) {
			continue
		}
		if err := m.removeLocked(uid); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, uid)
	}
	return removed, errors.Join(errs...)
}
