package topologymanager

import "fmt"

// Policy names (--topology-manager-policy).
const (
	PolicyNone           = "none"
	PolicyBestEffort     = "best-effort"
	PolicyRestricted     = "restricted"
	PolicySingleNUMANode = "single-numa-node"
)

// Hint is a NUMA placement a resource could get: Affinity nil means any
// (no preference); Preferred says the placement is as narrow as the
// resource allows.
type Hint struct {
	Affinity  *Mask
	Preferred bool
}

func (h Hint) String() string {
	if h.Affinity == nil {
		return fmt.Sprintf("{any %v}", h.Preferred)
	}
	return fmt.Sprintf("{%s %v}", h.Affinity, h.Preferred)
}

// ValidPolicy reports whether name is a policy.
func ValidPolicy(name string) bool {
	switch name {
	case PolicyNone, PolicyBestEffort, PolicyRestricted, PolicySingleNUMANode:
		return true
	}
	return false
}

// Merge chooses the best placement from the providers' hints (one map
// of resource → hints per provider; a nil list: no preference for that
// resource, an empty one: no placement possible) and says whether the
// policy admits it: best-effort always, restricted and single-numa-node
// only a preferred one (single-numa-node considers only single-node
// placements). The choice follows the kubelet's: every combination of
// one hint per resource is ANDed together; preferred beats not
// preferred, then the narrowest (lowest) mask; among non-preferred ones
// the width closest to the widest of the resources' narrowest hints.
func Merge(policy string, nodes []int, providers []map[string][]Hint) (Hint, bool) {
	all := NewMask(nodes...)
	lists := filter(providers)
	if policy == PolicySingleNUMANode {
		lists = singleNode(lists)
	}
	bestNonPreferred := widestNarrowest(lists)
	var best *Hint
	permute(lists, func(perm []Hint) {
		merged := mergePermutation(all, perm)
		best = compare(best, &merged, bestNonPreferred)
	})
	if best == nil {
		best = &Hint{Affinity: &all, Preferred: false}
	}
	out := *best
	if policy == PolicySingleNUMANode && out.Affinity != nil && *out.Affinity == all && len(nodes) > 1 {
		out.Affinity = nil
	}
	return out, policy == PolicyBestEffort || out.Preferred
}

// filter turns the providers' answers into one list of hints per
// resource.
func filter(providers []map[string][]Hint) [][]Hint {
	var out [][]Hint
	for _, hints := range providers {
		if len(hints) == 0 {
			out = append(out, []Hint{{Preferred: true}})
			continue
		}
		for _, resource := range sortedKeys(hints) {
			switch h := hints[resource]; {
			case h == nil:
				out = append(out, []Hint{{Preferred: true}})
			case len(h) == 0:
				out = append(out, []Hint{{Preferred: false}})
			default:
				out = append(out, h)
			}
		}
	}
	return out
}

// singleNode keeps only the preferred hints of one node (or any).
func singleNode(lists [][]Hint) [][]Hint {
	out := make([][]Hint, 0, len(lists))
	for _, hints := range lists {
		var kept []Hint
		for _, h := range hints {
			if h.Preferred && (h.Affinity == nil || h.Affinity.Count() == 1) {
				kept = append(kept, h)
			}
		}
		out = append(out, kept)
	}
	return out
}

// widestNarrowest is the largest, over resources, of the width of each
// resource's narrowest hint.
func widestNarrowest(lists [][]Hint) int {
	widest := 0
	for _, hints := range lists {
		narrowest := 0
		for _, h := range hints {
			if h.Affinity != nil && (narrowest == 0 || h.Affinity.Count() < narrowest) {
				narrowest = h.Affinity.Count()
			}
		}
		widest = max(widest, narrowest)
	}
	return widest
}

// mergePermutation ANDs one hint per resource: preferred only when all
// are and their masks agree.
func mergePermutation(all Mask, perm []Hint) Hint {
	merged, preferred := all, true
	var first *Mask
	for _, h := range perm {
		if h.Affinity != nil {
			merged &= *h.Affinity
			if first == nil {
				first = h.Affinity
			} else if *first != *h.Affinity {
				preferred = false
			}
		}
		if !h.Preferred {
			preferred = false
		}
	}
	return Hint{Affinity: &merged, Preferred: preferred}
}

// compare keeps the better of the best so far and a candidate.
func compare(cur, cand *Hint, bestNonPreferred int) *Hint {
	c := cand.Affinity.Count()
	switch {
	case c == 0:
		return cur
	case cur == nil:
		return cand
	case cur.Preferred != cand.Preferred:
		if cand.Preferred {
			return cand
		}
		return cur
	case cur.Preferred:
		return narrowest(cur, cand)
	}
	k := cur.Affinity.Count()
	switch {
	case k > bestNonPreferred:
		return narrowest(cur, cand)
	case k == bestNonPreferred:
		if c != bestNonPreferred {
			return cur
		}
		return narrowest(cur, cand)
	case c > bestNonPreferred:
		return cur
	case c == bestNonPreferred, c > k:
		return cand
	case c < k:
		return cur
	}
	return narrowest(cur, cand)
}

func narrowest(cur, cand *Hint) *Hint {
	if cand.Affinity.narrower(*cur.Affinity) {
		return cand
	}
	return cur
}

// permute calls f with every combination of one hint per list.
func permute(lists [][]Hint, f func([]Hint)) {
	var rec func(i int, acc []Hint)
	rec = func(i int, acc []Hint) {
		if i == len(lists) {
			f(acc)
			return
		}
		for _, h := range lists[i] {
			rec(i+1, append(acc, h))
		}
	}
	rec(0, nil)
}
