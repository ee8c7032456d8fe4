package cpumanager

import (
	"fmt"
	"slices"

	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// TakeByTopology chooses n CPUs among available, packed as the kubelet's
// static policy packs them: first whole NUMA nodes and sockets the request
// fills (the bigger level first), then whole cores, then single threads,
// each time preferring the groups with the fewest free CPUs (so free
// groups stay whole) and the lowest IDs.
func TakeByTopology(t *Topology, available cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
	if n <= 0 {
		return cpuset.New(), nil
	}
	if n > available.Size() {
		return cpuset.New(), fmt.Errorf("not enough cpus available to satisfy request: requested=%d, available=%d", n, available.Size())
	}
	a := &taker{t: t, free: available, need: n, result: cpuset.New(), numaFirst: t.NumSockets >= t.NumNUMANodes}
	if a.numaFirst {
		a.takeWhole(numaOf, a.numas())
		a.takeWhole(socketOf, a.sockets())
	} else {
		a.takeWhole(socketOf, a.sockets())
		a.takeWhole(numaOf, a.numas())
	}
	a.takeWhole(coreOf, a.cores())
	for _, core := range a.cores() {
		for _, id := range a.in(coreOf, core).List() {
			if a.need <= 0 {
				break
			}
			a.take(cpuset.New(id))
		}
	}
	if a.need > 0 {
		return cpuset.New(), fmt.Errorf("failed to allocate cpus")
	}
	return a.result, nil
}

// taker accumulates a choice of CPUs.
type taker struct {
	t         *Topology
	free      cpuset.CPUSet // still available
	need      int
	result    cpuset.CPUSet
	numaFirst bool // NUMA nodes are the bigger level (no more sockets than nodes)
}

func (a *taker) take(cpus cpuset.CPUSet) {
	a.result = a.result.Union(cpus)
	a.free = a.free.Difference(cpus)
	a.need -= cpus.Size()
}

// in is the free CPUs of group id at a level.
func (a *taker) in(level func(deps.CPUInfo) int, id int) cpuset.CPUSet {
	return a.t.where(&a.free, func(c deps.CPUInfo) bool { return level(c) == id })
}

// all is every CPU of group id at a level.
func (a *taker) all(level func(deps.CPUInfo) int, id int) cpuset.CPUSet {
	return a.t.where(nil, func(c deps.CPUInfo) bool { return level(c) == id })
}

// groups lists the groups at level having free CPUs within scope, fewest
// free CPUs first, then by ID.
func (a *taker) groups(level func(deps.CPUInfo) int, scope cpuset.CPUSet) []int {
	var ids []int
	for _, id := range scope.List() {
		if g := level(a.t.byID[id]); !slices.Contains(ids, g) {
			ids = append(ids, g)
		}
	}
	slices.SortFunc(ids, func(x, y int) int {
		if d := a.in(level, x).Size() - a.in(level, y).Size(); d != 0 {
			return d
		}
		return x - y
	})
	return ids
}

// within lists, for each outer group in order, the inner groups in it.
func (a *taker) within(outer func(deps.CPUInfo) int, outerIDs []int, inner func(deps.CPUInfo) int) []int {
	var out []int
	for _, o := range outerIDs {
		for _, g := range a.groups(inner, a.in(outer, o)) {
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}

func (a *taker) numas() []int {
	if a.numaFirst {
		return a.groups(numaOf, a.free)
	}
	return a.within(socketOf, a.sockets(), numaOf)
}

func (a *taker) sockets() []int {
	if a.numaFirst {
		return a.within(numaOf, a.numas(), socketOf)
	}
	return a.groups(socketOf, a.free)
}

func (a *taker) cores() []int {
	if a.numaFirst {
		return a.within(socketOf, a.sockets(), coreOf)
	}
	return a.within(numaOf, a.numas(), coreOf)
}

// takeWhole takes, in the given order, every group of the level that is
// entirely free and that the request still fills.
func (a *taker) takeWhole(level func(deps.CPUInfo) int, order []int) {
	for _, id := range order {
		all := a.all(level, id)
		if a.need >= all.Size() && a.in(level, id).Size() == all.Size() {
			a.take(all)
		}
	}
}
