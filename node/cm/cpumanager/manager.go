package cpumanager

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/cm/topologymanager"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// DefaultReconcilePeriod is how often running containers' cpusets are
// brought in step (--cpu-manager-reconcile-period).
const DefaultReconcilePeriod = 10 * time.Second

// Config configures the CPU manager.
type Config struct {
	// Policy is none (or empty) or static (--cpu-manager-policy).
	Policy string
	// ReservedCPUs are the CPUs kept off exclusive use
	// (--reserved-cpus); empty: NumReservedCPUs taken by topology.
	ReservedCPUs cpuset.CPUSet
	// NumReservedCPUs is kube-reserved + system-reserved cpu rounded up
	// (the static policy needs at least one).
	NumReservedCPUs int
	// Options are the policy options (--cpu-manager-policy-options):
	// full-pcpus-only=true.
	Options map[string]string
	// ReconcilePeriod defaults to DefaultReconcilePeriod.
	ReconcilePeriod time.Duration
	// RootDir holds the checkpoint file.
	RootDir string
}

// Ports are what the CPU manager acts on.
type Ports struct {
	// Runtime updates running containers' cpusets.
	Runtime ResourceUpdater
	// Files holds the checkpoint.
	Files deps.Files
	// Metrics counts reconcile passes; nil counts none.
	Metrics Observer
}

// Observer counts the reconcile loop's passes: ObserveCPUReconcile is
// called at the end of each, once every running container's cpuset was
// brought in step (or its update failed and waits for the next pass).
type Observer interface {
	ObserveCPUReconcile()
}

// ResourceUpdater is the CRI call the reconcile loop makes.
type ResourceUpdater interface {
	UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error
}

// Container is a running container as the reconcile loop sees it.
type Container struct {
	PodUID types.UID
	Name   string
	ID     string
}

// Pods tells the reconcile loop what runs.
type Pods interface {
	// HoldingResources are the pods that hold or may hold CPUs (desired,
	// not refused, not finished: activepods.HoldingResources); ok is false
	// until every pod source has been seen, when nothing may be taken for
	// stale.
	HoldingResources() (pods []*corev1.Pod, ok bool)
	// RunningContainers lists the running containers of the pods.
	RunningContainers() []Container
}

// Manager is the CPU manager.
type Manager struct {
	d      deps.Core
	ports  Ports
	cfg    Config
	policy *static // nil: the none policy
	store  store

	mu    sync.Mutex
	state State
	// applied is the cpuset last set on each container by ID.
	applied map[string]string
	// reuse are the CPUs of the init containers of the pod being
	// admitted, offered to its later containers.
	reuse map[types.UID]cpuset.CPUSet
}

// New builds the CPU manager and restores its state from the checkpoint
// under cfg.RootDir: a checkpoint of another policy, or one that does not
// fit this machine and reservation, is an error naming the file (drain
// the node and delete it, as with the kubelet).
func New(d deps.Core, ports Ports, cfg Config, machine deps.MachineInfo) (*Manager, error) {
	if cfg.Policy == "" {
		cfg.Policy = PolicyNone
	}
	if cfg.ReconcilePeriod <= 0 {
		cfg.ReconcilePeriod = DefaultReconcilePeriod
	}
	m := &Manager{d: d, ports: ports, cfg: cfg, store: newStore(ports.Files, cfg.RootDir), state: newState(), applied: map[string]string{}, reuse: map[types.UID]cpuset.CPUSet{}}
	full, err := parseOptions(cfg.Policy, cfg.Options)
	if err != nil {
		return nil, err
	}
	switch cfg.Policy {
	case PolicyNone:
	case PolicyStatic:
		if cfg.NumReservedCPUs == 0 && cfg.ReservedCPUs.IsEmpty() {
			return nil, fmt.Errorf("the static CPU manager policy requires systemreserved.cpu + kubereserved.cpu (or --reserved-cpus) to be greater than zero")
		}
		if !cfg.ReservedCPUs.IsEmpty() {
			cfg.NumReservedCPUs = cfg.ReservedCPUs.Size()
		}
		topo, err := NewTopology(machine.Topology)
		if err != nil {
			return nil, fmt.Errorf("static CPU manager policy: %w", err)
		}
		if m.policy, err = newStatic(topo, cfg.NumReservedCPUs, cfg.ReservedCPUs, full); err != nil {
			return nil, fmt.Errorf("static CPU manager policy: %w", err)
		}
	default:
		return nil, fmt.Errorf("unknown CPU manager policy %q (none or static)", cfg.Policy)
	}
	if err := m.restore(); err != nil {
		return nil, fmt.Errorf("could not restore state from checkpoint: %w; drain the node and delete the CPU manager checkpoint file %q before restarting", err, m.store.path)
	}
	return m, nil
}

// parseOptions reads the policy options; only the static policy takes
// any.
func parseOptions(policy string, opts map[string]string) (fullPCPUsOnly bool, err error) {
	for name, v := range opts {
		if name != OptionFullPCPUsOnly {
			return false, fmt.Errorf("unknown CPU manager policy option %q (supported: %s)", name, OptionFullPCPUsOnly)
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("CPU manager policy option %s=%q: not a boolean", name, v)
		}
		if b && policy != PolicyStatic {
			return false, fmt.Errorf("CPU manager policy option %s needs the static policy, not %q", name, policy)
		}
		fullPCPUsOnly = b
	}
	return fullPCPUsOnly, nil
}

// restore reads the checkpoint (or starts empty), validates it and writes
// it back.
func (m *Manager) restore() error {
	name, s, ok, err := m.store.read()
	if err != nil {
		return err
	}
	if ok {
		if name != m.cfg.Policy {
			return fmt.Errorf("configured policy %q differs from state checkpoint policy %q", m.cfg.Policy, name)
		}
		m.state = s
	}
	if m.policy != nil {
		if err := m.policy.validate(&m.state); err != nil {
			return err
		}
	} else if !m.state.Default.IsEmpty() || len(m.state.Assignments) > 0 {
		return fmt.Errorf("the none policy's checkpoint holds CPU assignments")
	}
	return m.store.write(m.cfg.Policy, m.state)
}

// Hints are the NUMA placements container c of pod could get (the
// topology manager's hint provider); nil under the none policy.
func (m *Manager) Hints(pod *corev1.Pod, c *corev1.Container) map[string][]topologymanager.Hint {
	if m.policy == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.policy.hints(&m.state, pod, c, m.reuse[pod.UID])
}

// Allocate gives container c of pod its exclusive CPUs (none under the
// none policy, or for a container that needs none), within affinity's
// NUMA nodes first. Containers are allocated in order, init containers
// first: an init container's CPUs (not a sidecar's) are offered again to
// the containers after it, as the kubelet reuses them.
func (m *Manager) Allocate(pod *corev1.Pod, c *corev1.Container, affinity topologymanager.Hint) error {
	if m.policy == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, held := m.state.get(pod.UID, c.Name)
	cpus, err := m.policy.allocate(&m.state, pod, c, m.reuse[pod.UID], affinity.Affinity)
	if err != nil {
		m.d.Log.Info("CPU allocation failed", "pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID), "container", c.Name, "error", err.Error())
		return err
	}
	m.updateReuse(pod, c, cpus)
	if !held && cpus.Size() > 0 {
		m.d.Log.Info("exclusive CPUs allocated", "pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID), "container", c.Name,
			"cpus", cpus.String(), "affinity", affinity.String(), "shared", m.state.Default.String())
		m.save()
	}
	return nil
}

// updateReuse keeps the CPUs of pod's init containers (not sidecars)
// for the containers after them; only the pod being admitted keeps any.
func (m *Manager) updateReuse(pod *corev1.Pod, c *corev1.Container, cpus cpuset.CPUSet) {
	for uid := range m.reuse {
		if uid != pod.UID {
			delete(m.reuse, uid)
		}
	}
	reuse, ok := m.reuse[pod.UID]
	if !ok {
		reuse = cpuset.New()
	}
	if slices.ContainsFunc(pod.Spec.InitContainers, func(i corev1.Container) bool { return i.Name == c.Name && !podutil.IsSidecar(&i) }) {
		m.reuse[pod.UID] = reuse.Union(cpus)
		return
	}
	m.reuse[pod.UID] = reuse.Difference(cpus)
}

// CPUs is the cpuset a new container of the pod runs on: its exclusive
// CPUs, else the shared pool; "" under the none policy (the runtime's
// default).
func (m *Manager) CPUs(uid types.UID, container string) string {
	if m.policy == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cpus, ok := m.state.get(uid, container); ok {
		return cpus.String()
	}
	return m.state.Default.String()
}

// Release gives a pod's exclusive CPUs back to the shared pool (the pod
// was refused, or none of its containers runs any more).
func (m *Manager) Release(pod *corev1.Pod) { m.release(pod.UID) }

func (m *Manager) release(uid types.UID) {
	if m.policy == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.reuse, uid)
	if _, ok := m.state.Assignments[uid]; !ok {
		return
	}
	m.policy.release(&m.state, uid)
	m.d.Log.Info("exclusive CPUs released", "uid", string(uid), "shared", m.state.Default.String())
	m.save()
}

// State is a copy of the current state.
func (m *Manager) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state.clone()
}

// save writes the checkpoint; a failure is logged (the state in memory
// stays right, the next change writes it again).
func (m *Manager) save() {
	if err := m.store.write(m.cfg.Policy, m.state); err != nil {
		m.d.Log.Warn("writing the CPU manager checkpoint failed", "error", err.Error())
	}
}

// Start runs the reconcile loop (static policy only) until ctx ends.
func (m *Manager) Start(ctx context.Context, pods Pods) {
	if m.policy == nil {
		return
	}
	m.d.Tasks.Go("cpumanager reconcile", func() {
		t := m.d.Tasks.NewTicker("cpumanager reconcile", m.cfg.ReconcilePeriod)
		defer t.Stop()
		for t.Wait(ctx) == nil {
			m.Reconcile(ctx, pods)
		}
	})
}

// Reconcile releases the CPUs of pods no longer active and sets every
// running container's cpuset to what it should be (its exclusive CPUs or
// the shared pool) where it was not set so yet.
func (m *Manager) Reconcile(ctx context.Context, pods Pods) {
	if active, ok := pods.HoldingResources(); ok {
		m.releaseStale(active)
	}
	running := pods.RunningContainers()
	seen := map[string]bool{}
	for _, c := range running {
		seen[c.ID] = true
		want := m.CPUs(c.PodUID, c.Name)
		m.mu.Lock()
		done := m.applied[c.ID] == want
		m.mu.Unlock()
		if done {
			continue
		}
		err := m.ports.Runtime.UpdateContainerResources(ctx, c.ID, &runtimeapi.ContainerResources{
			Linux: &runtimeapi.LinuxContainerResources{CpusetCpus: want}})
		if err != nil {
			m.d.Log.Warn("updating a container's cpuset failed; will retry", "container", c.Name, "id", c.ID, "pod", string(c.PodUID), "cpuset", want, "error", err.Error())
			continue
		}
		m.mu.Lock()
		m.applied[c.ID] = want
		m.mu.Unlock()
	}
	m.mu.Lock()
	for id := range m.applied {
		if !seen[id] {
			delete(m.applied, id)
		}
	}
	m.mu.Unlock()
	if m.ports.Metrics != nil {
		m.ports.Metrics.ObserveCPUReconcile()
	}
}

// releaseStale releases the CPUs of pods that are not active.
func (m *Manager) releaseStale(active []*corev1.Pod) {
	keep := map[types.UID]bool{}
	for _, p := range active {
		keep[p.UID] = true
	}
	m.mu.Lock()
	var stale []types.UID
	for _, uid := range sortedUIDs(&m.state) {
		if !keep[uid] {
			stale = append(stale, uid)
		}
	}
	m.mu.Unlock()
	for _, uid := range stale {
		m.d.Log.Info("releasing the CPUs of a pod no longer active", "uid", string(uid))
		m.release(uid)
	}
}
