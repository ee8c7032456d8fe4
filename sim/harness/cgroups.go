package harness

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// CgroupTree models the node's cgroup hierarchy for the agent's
// deps.Cgroups port: cgroups the agent created with their last limits,
// and, through the fake runtime, the sandboxes and containers running in
// them (fakecri places each under its sandbox's CgroupParent). A cgroup
// with a running process under it cannot be removed, as on a real node.
// The tree outlives agent crashes, like the kernel's.
type CgroupTree struct {
	rt    *fakecri.Runtime
	nodes map[string]deps.CgroupResources
	// failRemoves: how many Remove calls still fail (FailRemoves).
	failRemoves int
	// gen counts the Ensure and Remove calls (Generation).
	gen uint64
}

// Generation is a counter that moves with every Ensure and Remove: an
// observer that saw the same generation before has nothing new to read.
func (t *CgroupTree) Generation() uint64 { return t.gen }

// FailRemoves makes the next n removals of an existing cgroup fail, as
// when a leaked process keeps it busy.
func (t *CgroupTree) FailRemoves(n int) { t.failRemoves = n }

// NewCgroupTree returns an empty tree (only the root) over rt.
func NewCgroupTree(rt *fakecri.Runtime) *CgroupTree {
	return &CgroupTree{rt: rt, nodes: map[string]deps.CgroupResources{"/": {}}}
}

var _ deps.Cgroups = (*CgroupTree)(nil)

func clean(p string) string { return path.Clean("/" + p) }

// Ensure implements deps.Cgroups: parents are created without limits;
// limits a field of r leaves nil keep their value.
func (t *CgroupTree) Ensure(p string, r deps.CgroupResources) error {
	p = clean(p)
	t.gen++
	for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
		if _, ok := t.nodes[dir]; !ok {
			t.nodes[dir] = deps.CgroupResources{}
		}
	}
	cur := t.nodes[p]
	if r.CPUShares != nil {
		cur.CPUShares = r.CPUShares
	}
	if r.CPUQuota != nil {
		cur.CPUQuota = r.CPUQuota
	}
	if r.CPUPeriod != nil {
		cur.CPUPeriod = r.CPUPeriod
	}
	if r.Memory != nil {
		cur.Memory = r.Memory
	}
	if r.HugePageLimits != nil {
		cur.HugePageLimits = maps.Clone(r.HugePageLimits)
	}
	t.nodes[p] = cur
	return nil
}

// Remove implements deps.Cgroups.
func (t *CgroupTree) Remove(p string) error {
	p = clean(p)
	t.gen++
	if _, ok := t.nodes[p]; !ok {
		return nil
	}
	if t.failRemoves > 0 {
		t.failRemoves--
		return fmt.Errorf("remove cgroup %s: device or resource busy (injected)", p)
	}
	if users := t.rt.TrueCgroupUsers(p); len(users) > 0 {
		return fmt.Errorf("remove cgroup %s: device or resource busy (%d processes, first in %s)", p, len(users), users[0])
	}
	for k := range t.nodes {
		if k == p || strings.HasPrefix(k, p+"/") {
			delete(t.nodes, k)
		}
	}
	return nil
}

// List implements deps.Cgroups.
func (t *CgroupTree) List(p string) ([]string, error) {
	p = clean(p)
	var out []string
	for k := range t.nodes {
		if k != "/" && path.Dir(k) == p {
			out = append(out, path.Base(k))
		}
	}
	slices.Sort(out)
	return out, nil
}

// Get returns the limits of the cgroup at p and whether it exists.
func (t *CgroupTree) Get(p string) (deps.CgroupResources, bool) {
	r, ok := t.nodes[clean(p)]
	return r, ok
}

// Paths lists every cgroup in the tree, sorted.
func (t *CgroupTree) Paths() []string {
	return slices.Sorted(maps.Keys(t.nodes))
}
