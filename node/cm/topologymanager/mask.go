// Package topologymanager is the kubelet's topology manager: at
// admission it asks the resource managers (CPU, memory) for the NUMA
// placements each container of a pod could get, merges their hints under
// the node's policy (none, best-effort, restricted, single-numa-node;
// container scope) and hands the chosen NUMA affinity to each manager's
// allocation, refusing the pod (TopologyAffinityError) where the policy
// demands an alignment that cannot be had.
package topologymanager

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Mask is a set of NUMA nodes (bit n: node n).
type Mask uint64

// NewMask is the mask of the given nodes.
func NewMask(nodes ...int) Mask {
	var m Mask
	for _, n := range nodes {
		m |= 1 << uint(n)
	}
	return m
}

// Nodes lists the mask's nodes, ascending.
func (m Mask) Nodes() []int {
	var out []int
	for n := 0; n < 64; n++ {
		if m&(1<<uint(n)) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Count is the number of nodes in the mask.
func (m Mask) Count() int { return bits.OnesCount64(uint64(m)) }

// Has reports whether node n is in the mask.
func (m Mask) Has(n int) bool { return m&(1<<uint(n)) != 0 }

func (m Mask) String() string {
	var parts []string
	for _, n := range m.Nodes() {
		parts = append(parts, strconv.Itoa(n))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// narrower reports whether m is a better (narrower, else lower) mask
// than o, as the kubelet orders equally preferred hints.
func (m Mask) narrower(o Mask) bool {
	if m.Count() != o.Count() {
		return m.Count() < o.Count()
	}
	return slices.Compare(m.Nodes(), o.Nodes()) < 0
}

// Masks calls f with every non-empty mask of the given nodes, the single
// nodes first, then the pairs, and so on, each size in lexical order.
func Masks(nodes []int, f func(Mask)) {
	var rec func(start, left int, acc Mask)
	rec = func(start, left int, acc Mask) {
		if left == 0 {
			f(acc)
			return
		}
		for i := start; i <= len(nodes)-left; i++ {
			rec(i+1, left-1, acc|NewMask(nodes[i]))
		}
	}
	for size := 1; size <= len(nodes); size++ {
		rec(0, size, 0)
	}
}
