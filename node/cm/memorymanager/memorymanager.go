// Package memorymanager is the kubelet's memory manager: with the Static
// policy, each container of a Guaranteed pod gets its memory request
// reserved on a set of NUMA nodes (the topology manager's choice, else
// the narrowest that has room) and runs with cpuset.mems set to them;
// the reservations live in a checkpoint file under the root directory.
// The None policy places nothing.
package memorymanager

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/cm/topologymanager"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/statefile"
)

// Policy names (--memory-manager-policy), spelled as the kubelet's.
const (
	PolicyNone   = "None"
	PolicyStatic = "Static"
)

// CheckpointFile is the state file's name under the root directory.
const CheckpointFile = "memory_manager_state"

// Config configures the memory manager.
type Config struct {
	// Policy is None (or empty) or Static.
	Policy string
	// Reserved is the memory kept off each NUMA node (--reserved-memory
	// 0:memory=1Gi); under Static it must add up to NodeReserved.
	Reserved map[int]uint64
	// NodeReserved is kube-reserved + system-reserved + the hard
	// eviction threshold of memory, what allocatable takes away.
	NodeReserved uint64
	// RootDir holds the checkpoint.
	RootDir string
}

// Block is a container's memory and the NUMA nodes it comes from: its
// affinity (cpuset.mems) and each node's share, in the same order.
type Block struct {
	NUMANodes []int    `json:"numaAffinity"`
	Size      uint64   `json:"size"`
	Shares    []uint64 `json:"shares"`
}

// Manager is the memory manager.
type Manager struct {
	d      deps.Core
	files  deps.Files
	cfg    Config
	static bool
	path   string
	// allocatable is each node's memory less its reservation.
	allocatable map[int]uint64

	mu sync.Mutex
	// blocks: pod UID → container → its block.
	blocks map[types.UID]map[string]Block
}

// New builds the memory manager and restores its checkpoint, which must
// be of the same policy and fit the machine's nodes (else an error names
// the file: drain the node and delete it, as with the kubelet).
func New(d deps.Core, files deps.Files, cfg Config, machine deps.MachineInfo) (*Manager, error) {
	if cfg.Policy == "" {
		cfg.Policy = PolicyNone
	}
	m := &Manager{d: d, files: files, cfg: cfg, path: filepath.Join(cfg.RootDir, CheckpointFile),
		allocatable: map[int]uint64{}, blocks: map[types.UID]map[string]Block{}}
	switch cfg.Policy {
	case PolicyNone:
	case PolicyStatic:
		m.static = true
		if err := m.sizeNodes(machine.NUMANodes); err != nil {
			return nil, fmt.Errorf("static memory manager policy: %w", err)
		}
	default:
		return nil, fmt.Errorf("unknown memory manager policy %q (None or Static)", cfg.Policy)
	}
	if err := m.restore(); err != nil {
		return nil, fmt.Errorf("could not restore state from checkpoint: %w; drain the node and delete the memory manager checkpoint file %q before restarting", err, m.path)
	}
	return m, nil
}

// sizeNodes computes each node's allocatable memory and checks the
// reservation as the kubelet does.
func (m *Manager) sizeNodes(nodes []deps.NUMANode) error {
	if len(nodes) == 0 {
		return fmt.Errorf("the machine's NUMA nodes are unknown")
	}
	var total uint64
	for _, n := range nodes {
		r := m.cfg.Reserved[n.ID]
		if r > n.MemoryBytes {
			return fmt.Errorf("reserved memory %d of NUMA node %d exceeds its %d bytes", r, n.ID, n.MemoryBytes)
		}
		m.allocatable[n.ID] = n.MemoryBytes - r
		total += r
	}
	for id := range m.cfg.Reserved {
		if _, ok := m.allocatable[id]; !ok {
			return fmt.Errorf("memory reserved on NUMA node %d, which this machine does not have", id)
		}
	}
	if total != m.cfg.NodeReserved {
		return fmt.Errorf("the total amount %q of type %q is not equal to the value %q determined by Node Allocatable feature",
			strconv.FormatUint(total, 10), corev1.ResourceMemory, strconv.FormatUint(m.cfg.NodeReserved, 10))
	}
	return nil
}

// nodes lists the NUMA nodes, ascending.
func (m *Manager) nodes() []int { return slices.Sorted(maps.Keys(m.allocatable)) }

// free is each node's memory not reserved for a container.
func (m *Manager) free() map[int]uint64 {
	out := maps.Clone(m.allocatable)
	for _, cs := range m.blocks {
		for _, b := range cs {
			for i, n := range b.NUMANodes {
				out[n] -= b.Shares[i]
			}
		}
	}
	return out
}

// request is the memory a container of a Guaranteed pod asks for (0: the
// manager leaves it alone).
func request(pod *corev1.Pod, c *corev1.Container) uint64 {
	if podspec.QOSClass(pod) != corev1.PodQOSGuaranteed {
		return 0
	}
	q, ok := c.Resources.Requests[corev1.ResourceMemory]
	if !ok || q.Sign() <= 0 {
		return 0
	}
	return uint64(q.Value())
}

// Hints are the NUMA placements container c could get: every set of
// nodes whose free memory covers its request, preferred when no smaller
// set has as much allocatable memory; its own nodes when it has a block.
func (m *Manager) Hints(pod *corev1.Pod, c *corev1.Container) map[string][]topologymanager.Hint {
	size := request(pod, c)
	if !m.static || size == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.blocks[pod.UID][c.Name]; ok {
		mask := topologymanager.NewMask(b.NUMANodes...)
		return map[string][]topologymanager.Hint{string(corev1.ResourceMemory): {{Affinity: &mask, Preferred: true}}}
	}
	return map[string][]topologymanager.Hint{string(corev1.ResourceMemory): m.hints(size)}
}

func (m *Manager) hints(size uint64) []topologymanager.Hint {
	free, nodes := m.free(), m.nodes()
	narrowest := len(nodes)
	out := []topologymanager.Hint{}
	topologymanager.Masks(nodes, func(mask topologymanager.Mask) {
		var total, avail uint64
		for _, n := range mask.Nodes() {
			total += m.allocatable[n]
			avail += free[n]
		}
		if total >= size && mask.Count() < narrowest {
			narrowest = mask.Count()
		}
		if avail >= size {
			out = append(out, topologymanager.Hint{Affinity: &mask})
		}
	})
	for i := range out {
		out[i].Preferred = out[i].Affinity.Count() == narrowest
	}
	return out
}

// Allocate reserves container c's memory on the nodes of affinity, or
// when it names none on the narrowest (then lowest) set of nodes with
// room.
func (m *Manager) Allocate(pod *corev1.Pod, c *corev1.Container, affinity topologymanager.Hint) error {
	size := request(pod, c)
	if !m.static || size == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.blocks[pod.UID][c.Name]; ok {
		return nil
	}
	mask := affinity.Affinity
	if mask == nil {
		best, ok := topologymanager.Merge(topologymanager.PolicyBestEffort, m.nodes(),
			[]map[string][]topologymanager.Hint{{string(corev1.ResourceMemory): m.hints(size)}})
		if !ok || best.Affinity == nil {
			return fmt.Errorf("no NUMA nodes with enough memory (%d bytes) for container %q", size, c.Name)
		}
		mask = best.Affinity
	}
	free := m.free()
	var avail uint64
	for _, n := range mask.Nodes() {
		avail += free[n]
	}
	if avail < size {
		return fmt.Errorf("NUMA nodes %s have %d bytes free, container %q asks for %d", mask, avail, c.Name, size)
	}
	// Each node of the affinity gives what it can, lowest first.
	b := Block{NUMANodes: mask.Nodes(), Size: size}
	left := size
	for _, n := range b.NUMANodes {
		take := min(left, free[n])
		b.Shares = append(b.Shares, take)
		left -= take
	}
	if m.blocks[pod.UID] == nil {
		m.blocks[pod.UID] = map[string]Block{}
	}
	m.blocks[pod.UID][c.Name] = b
	m.d.Log.Info("memory reserved on NUMA nodes", "pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID), "container", c.Name,
		"nodes", fmt.Sprint(b.NUMANodes), "bytes", size)
	m.save()
	return nil
}

// Mems is the cpuset.mems of a new container of the pod: the nodes of
// its block, as a list ("0-1,3"); "" when it has none.
func (m *Manager) Mems(uid types.UID, container string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blocks[uid][container]
	if !ok {
		return ""
	}
	return cpuset.New(b.NUMANodes...).String()
}

// Release gives back the memory the pod holds.
func (m *Manager) Release(pod *corev1.Pod) { m.release(pod.UID) }

func (m *Manager) release(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.blocks[uid]; !ok {
		return
	}
	delete(m.blocks, uid)
	m.d.Log.Info("NUMA memory released", "uid", string(uid))
	m.save()
}

// ReleaseStale gives back the memory of pods not among active.
func (m *Manager) ReleaseStale(active []*corev1.Pod) {
	keep := map[types.UID]bool{}
	for _, p := range active {
		keep[p.UID] = true
	}
	m.mu.Lock()
	var stale []types.UID
	for _, uid := range slices.Sorted(maps.Keys(m.blocks)) {
		if !keep[uid] {
			stale = append(stale, uid)
		}
	}
	m.mu.Unlock()
	for _, uid := range stale {
		m.release(uid)
	}
}

// Blocks is a copy of every container's block, by pod UID and name.
func (m *Manager) Blocks() map[types.UID]map[string]Block {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[types.UID]map[string]Block{}
	for uid, cs := range m.blocks {
		out[uid] = maps.Clone(cs)
	}
	return out
}

// checkpoint is the file's form: the policy, each node's allocatable and
// free memory, the blocks, and a checksum of the rest.
type checkpoint struct {
	PolicyName   string                      `json:"policyName"`
	MachineState map[string]nodeState        `json:"machineState,omitempty"`
	Entries      map[string]map[string]Block `json:"entries,omitempty"`
	Checksum     uint32                      `json:"checksum"`
}

type nodeState struct {
	Allocatable uint64 `json:"allocatable"`
	Free        uint64 `json:"free"`
}

// sum is the checkpoint's checksum (statefile.Sum32 with checksum 0).
func (c checkpoint) sum() uint32 {
	c.Checksum = 0
	sum, _ := statefile.Sum32(c)
	return sum
}

func (m *Manager) encode() []byte {
	c := checkpoint{PolicyName: m.cfg.Policy, MachineState: map[string]nodeState{}, Entries: map[string]map[string]Block{}}
	free := m.free()
	for n, a := range m.allocatable {
		c.MachineState[strconv.Itoa(n)] = nodeState{Allocatable: a, Free: free[n]}
	}
	for uid, cs := range m.blocks {
		c.Entries[string(uid)] = maps.Clone(cs)
	}
	c.Checksum = c.sum()
	b, _ := json.MarshalIndent(c, "", "  ")
	return b
}

// restore reads the checkpoint (none: start empty), checks it and writes
// it back.
func (m *Manager) restore() error {
	data, ok, err := statefile.Read(m.files, m.path)
	if err != nil {
		return err
	}
	if ok {
		var c checkpoint
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("%s is not a memory manager checkpoint: %w", m.path, err)
		}
		if c.sum() != c.Checksum {
			return fmt.Errorf("checkpoint %s is corrupted", m.path)
		}
		if c.PolicyName != m.cfg.Policy {
			return fmt.Errorf("configured policy %q differs from state checkpoint policy %q", m.cfg.Policy, c.PolicyName)
		}
		for uid, cs := range c.Entries {
			m.blocks[types.UID(uid)] = cs
		}
		if err := m.validate(c.MachineState); err != nil {
			return err
		}
	}
	return m.write()
}

// validate checks the restored blocks against the machine: known nodes,
// no node over its allocatable memory, the same machine state.
func (m *Manager) validate(saved map[string]nodeState) error {
	if !m.static {
		if len(m.blocks) > 0 {
			return fmt.Errorf("the None policy's checkpoint holds memory blocks")
		}
		return nil
	}
	used := map[int]uint64{}
	for uid, cs := range m.blocks {
		for name, b := range cs {
			var sum uint64
			for i, n := range b.NUMANodes {
				if _, ok := m.allocatable[n]; !ok || i >= len(b.Shares) {
					return fmt.Errorf("container %q of pod %s holds memory of NUMA node %d, which this machine does not have", name, uid, n)
				}
				used[n] += b.Shares[i]
				sum += b.Shares[i]
			}
			if sum != b.Size || len(b.Shares) != len(b.NUMANodes) {
				return fmt.Errorf("container %q of pod %s: a block of %d bytes whose shares %v add up to %d", name, uid, b.Size, b.Shares, sum)
			}
		}
	}
	for n, a := range m.allocatable {
		if used[n] > a {
			return fmt.Errorf("NUMA node %d: %d bytes reserved for containers, more than its %d allocatable", n, used[n], a)
		}
		if s, ok := saved[strconv.Itoa(n)]; !ok || s.Allocatable != a {
			return fmt.Errorf("the expected machine state is different from the real one: NUMA node %d allocatable %d, checkpoint %+v", n, a, s)
		}
	}
	return nil
}

func (m *Manager) save() {
	if err := m.write(); err != nil {
		m.d.Log.Warn("writing the memory manager checkpoint failed", "error", err.Error())
	}
}

// write replaces the checkpoint file with the manager's state.
func (m *Manager) write() error {
	return statefile.Write(m.files, m.path, m.encode(), 0o644)
}
