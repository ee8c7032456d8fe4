// Package cpumanager is the kubelet's CPU manager: with the static policy,
// the containers of Guaranteed pods that ask for whole CPUs get CPUs of
// their own, chosen by the machine's topology, and every other container
// runs on the shared pool (all CPUs but the exclusive ones); the
// assignments live in a checkpoint file under the root directory, and a
// reconcile loop keeps every running container's cpuset in step through
// CRI UpdateContainerResources. The none policy pins nothing.
package cpumanager

import (
	"fmt"
	"slices"

	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Topology is the machine's CPUs and where each sits.
type Topology struct {
	cpus []deps.CPUInfo
	byID map[int]deps.CPUInfo
	// NumSockets, NumNUMANodes and NumCores count the distinct ones.
	NumSockets, NumNUMANodes, NumCores int
}

// NewTopology indexes the machine's CPUs; none is an error (the static
// policy cannot work without them).
func NewTopology(cpus []deps.CPUInfo) (*Topology, error) {
	if len(cpus) == 0 {
		return nil, fmt.Errorf("the machine's CPU topology is unknown")
	}
	t := &Topology{cpus: slices.Clone(cpus), byID: map[int]deps.CPUInfo{}}
	slices.SortFunc(t.cpus, func(a, b deps.CPUInfo) int { return a.ID - b.ID })
	sockets, numas, cores := map[int]bool{}, map[int]bool{}, map[int]bool{}
	for _, c := range t.cpus {
		if _, dup := t.byID[c.ID]; dup {
			return nil, fmt.Errorf("CPU %d is listed twice in the machine's topology", c.ID)
		}
		t.byID[c.ID] = c
		sockets[c.SocketID], numas[c.NUMANodeID], cores[c.CoreID] = true, true, true
	}
	t.NumSockets, t.NumNUMANodes, t.NumCores = len(sockets), len(numas), len(cores)
	return t, nil
}

// CPUs is every CPU of the machine.
func (t *Topology) CPUs() cpuset.CPUSet { return t.where(nil, func(deps.CPUInfo) bool { return true }) }

// CPUsPerCore is the number of hardware threads of a core.
func (t *Topology) CPUsPerCore() int { return len(t.cpus) / t.NumCores }

// CoreCPUs is every CPU of the cores the given CPUs sit on.
func (t *Topology) CoreCPUs(cpus cpuset.CPUSet) cpuset.CPUSet {
	cores := map[int]bool{}
	for _, id := range cpus.List() {
		cores[t.byID[id].CoreID] = true
	}
	return t.where(nil, func(c deps.CPUInfo) bool { return cores[c.CoreID] })
}

// NUMANodesOf lists the NUMA nodes of the given CPUs, ascending.
func (t *Topology) NUMANodesOf(cpus cpuset.CPUSet) []int {
	var out []int
	for _, id := range cpus.List() {
		if n := t.byID[id].NUMANodeID; !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// NUMANodeCPUs is every CPU of the given NUMA nodes.
func (t *Topology) NUMANodeCPUs(nodes ...int) cpuset.CPUSet {
	return t.where(nil, func(c deps.CPUInfo) bool { return slices.Contains(nodes, c.NUMANodeID) })
}

// NUMANodes lists the machine's NUMA nodes, ascending.
func (t *Topology) NUMANodes() []int { return t.NUMANodesOf(t.CPUs()) }

// where is the CPUs of among (nil: all) that keep says yes to.
func (t *Topology) where(among *cpuset.CPUSet, keep func(deps.CPUInfo) bool) cpuset.CPUSet {
	var ids []int
	for _, c := range t.cpus {
		if (among == nil || among.Contains(c.ID)) && keep(c) {
			ids = append(ids, c.ID)
		}
	}
	return cpuset.New(ids...)
}

// Levels of the topology a CPU belongs to.
var (
	socketOf = func(c deps.CPUInfo) int { return c.SocketID }
	numaOf   = func(c deps.CPUInfo) int { return c.NUMANodeID }
	coreOf   = func(c deps.CPUInfo) int { return c.CoreID }
)

// wholeCores is the CPUs of among whose core is entirely in among.
func (t *Topology) wholeCores(among cpuset.CPUSet) cpuset.CPUSet {
	return t.where(&among, func(c deps.CPUInfo) bool {
		return t.where(nil, func(o deps.CPUInfo) bool { return o.CoreID == c.CoreID }).IsSubsetOf(among)
	})
}
