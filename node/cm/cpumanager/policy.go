package cpumanager

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/cm/topologymanager"
	"github.com/lockstep-dev/lockstep/node/podspec"
)

// Policy names (--cpu-manager-policy).
const (
	PolicyNone   = "none"
	PolicyStatic = "static"
)

// OptionFullPCPUsOnly is the static policy option that hands out whole
// physical cores only (--cpu-manager-policy-options=full-pcpus-only=true).
const OptionFullPCPUsOnly = "full-pcpus-only"

// ReasonSMTAlignmentError is the admission reason when full-pcpus-only
// cannot be honoured, as the kubelet's.
const ReasonSMTAlignmentError = "SMTAlignmentError"

// smtAlignmentError refuses a pod under full-pcpus-only.
type smtAlignmentError struct{ msg string }

func (e smtAlignmentError) Error() string  { return e.msg }
func (e smtAlignmentError) Reason() string { return ReasonSMTAlignmentError }

// static is the static policy: exclusive CPUs for Guaranteed pods'
// containers asking for whole CPUs, chosen by TakeByTopology from the
// shared pool less the reserved CPUs.
type static struct {
	topo *Topology
	// reserved stay in the shared pool, never exclusive; reservedCores
	// are the whole cores they sit on (full-pcpus-only keeps off them).
	reserved, reservedCores cpuset.CPUSet
	fullPCPUsOnly           bool
}

// newStatic builds the static policy: reserved is --reserved-cpus, or
// when empty numReserved CPUs are taken by topology.
func newStatic(topo *Topology, numReserved int, reserved cpuset.CPUSet, fullPCPUsOnly bool) (*static, error) {
	if reserved.IsEmpty() {
		var err error
		if reserved, err = TakeByTopology(topo, topo.CPUs(), numReserved); err != nil {
			return nil, fmt.Errorf("reserve %d CPUs: %w", numReserved, err)
		}
	}
	if !reserved.IsSubsetOf(topo.CPUs()) {
		return nil, fmt.Errorf("reserved CPUs %q are not all CPUs of this machine (%q)", reserved, topo.CPUs())
	}
	if reserved.Size() != numReserved {
		return nil, fmt.Errorf("unable to reserve the required amount of CPUs (size of %s did not equal %d)", reserved, numReserved)
	}
	return &static{topo: topo, reserved: reserved, reservedCores: topo.CoreCPUs(reserved), fullPCPUsOnly: fullPCPUsOnly}, nil
}

// validate checks a restored state against this policy and machine, and
// fills an empty one with every CPU in the shared pool.
func (p *static) validate(s *State) error {
	all := p.topo.CPUs()
	if s.Default.IsEmpty() {
		if len(s.Assignments) != 0 {
			return fmt.Errorf("default cpuset cannot be empty")
		}
		s.Default = all
		return nil
	}
	if !p.reserved.IsSubsetOf(s.Default) {
		return fmt.Errorf("not all reserved cpus: %q are present in defaultCpuSet: %q", p.reserved, s.Default)
	}
	known := s.Default
	seen := cpuset.New()
	for _, uid := range sortedUIDs(s) {
		for _, name := range sortedNames(s.Assignments[uid]) {
			cpus := s.Assignments[uid][name]
			if !cpus.Intersection(s.Default).IsEmpty() {
				return fmt.Errorf("pod: %s, container: %s cpuset: %q overlaps with default cpuset %q", uid, name, cpus, s.Default)
			}
			known = known.Union(cpus)
		}
		pod := cpuset.New()
		for _, cpus := range s.Assignments[uid] {
			pod = pod.Union(cpus)
		}
		if !pod.Intersection(seen).IsEmpty() {
			return fmt.Errorf("pod: %s cpuset %q overlaps with the exclusive CPUs of other pods %q", uid, pod, seen)
		}
		seen = seen.Union(pod)
	}
	if !known.Equals(all) {
		return fmt.Errorf("current set of available CPUs %q doesn't match with CPUs in state %q", all, known)
	}
	return nil
}

// GuaranteedCPUs is how many exclusive CPUs a container gets under the
// static policy: its CPU request when the pod is Guaranteed and the
// request a whole number; 0 otherwise (and for pods with pod-level
// resources, which the kubelet leaves shared without its feature gate).
func GuaranteedCPUs(pod *corev1.Pod, c *corev1.Container) int {
	if podspec.QOSClass(pod) != corev1.PodQOSGuaranteed {
		return 0
	}
	if r := pod.Spec.Resources; r != nil && (len(r.Requests) > 0 || len(r.Limits) > 0) {
		return 0
	}
	q, ok := c.Resources.Requests[corev1.ResourceCPU]
	if !ok || q.Value()*1000 != q.MilliValue() {
		return 0
	}
	return int(q.Value())
}

// allocate gives container c of pod its exclusive CPUs, from the
// shared pool (less the reserved CPUs) and reuse (the CPUs of the pod's
// init containers before it), within the NUMA nodes of affinity first.
// A container that has CPUs already keeps them. It returns the CPUs c
// holds (none when it needs none).
func (p *static) allocate(s *State, pod *corev1.Pod, c *corev1.Container, reuse cpuset.CPUSet, affinity *topologymanager.Mask) (cpuset.CPUSet, error) {
	n := GuaranteedCPUs(pod, c)
	if n == 0 {
		return cpuset.New(), nil
	}
	if cpus, ok := s.get(pod.UID, c.Name); ok {
		return cpus, nil
	}
	avail, err := p.available(s, n, reuse)
	if err != nil {
		return cpuset.New(), err
	}
	cpus := cpuset.New()
	if affinity != nil {
		aligned := avail.Intersection(p.topo.NUMANodeCPUs(affinity.Nodes()...))
		if cpus, err = TakeByTopology(p.topo, aligned, min(n, aligned.Size())); err != nil {
			return cpuset.New(), err
		}
	}
	rest, err := TakeByTopology(p.topo, avail.Difference(cpus), n-cpus.Size())
	if err != nil {
		return cpuset.New(), err
	}
	cpus = cpus.Union(rest)
	s.Default = s.Default.Difference(cpus)
	s.set(pod.UID, c.Name, cpus)
	return cpus, nil
}

// available is what n exclusive CPUs may be taken from: the shared pool
// less the reserved CPUs, and reuse; under full-pcpus-only only whole
// free cores, n a multiple of the threads per core.
func (p *static) available(s *State, n int, reuse cpuset.CPUSet) (cpuset.CPUSet, error) {
	avail := s.Default.Difference(p.reserved).Union(reuse)
	if !p.fullPCPUsOnly {
		return avail, nil
	}
	perCore := p.topo.CPUsPerCore()
	if n%perCore != 0 {
		return cpuset.New(), smtAlignmentError{fmt.Sprintf("SMT Alignment Error: requested %d cpus not multiple cpus per core = %d", n, perCore)}
	}
	whole := p.topo.wholeCores(avail.Difference(p.reservedCores))
	if whole.Size() < n {
		return cpuset.New(), smtAlignmentError{fmt.Sprintf("SMT Alignment Error: not enough free physical CPUs: available physical CPUs = %d, requested CPUs = %d, CPUs per core = %d", whole.Size(), n, perCore)}
	}
	return whole, nil
}

// hints are the NUMA placements container c could get: for every set of
// NUMA nodes whose free CPUs (with reuse) cover the request, a hint,
// preferred when no smaller set of nodes has as many CPUs in all; from
// the CPUs it holds already if it has them (none if they are not the
// count it asks for now).
func (p *static) hints(s *State, pod *corev1.Pod, c *corev1.Container, reuse cpuset.CPUSet) map[string][]topologymanager.Hint {
	n := GuaranteedCPUs(pod, c)
	if n == 0 {
		return nil
	}
	avail := s.Default.Difference(p.reserved).Union(reuse)
	if held, ok := s.get(pod.UID, c.Name); ok {
		if held.Size() != n {
			return map[string][]topologymanager.Hint{string(corev1.ResourceCPU): {}}
		}
		avail = held
	}
	nodes := p.topo.NUMANodes()
	narrowest := len(nodes)
	var out []topologymanager.Hint
	topologymanager.Masks(nodes, func(m topologymanager.Mask) {
		in := p.topo.NUMANodeCPUs(m.Nodes()...)
		if in.Size() >= n && m.Count() < narrowest {
			narrowest = m.Count()
		}
		if avail.Intersection(in).Size() >= n {
			out = append(out, topologymanager.Hint{Affinity: &m})
		}
	})
	for i := range out {
		out[i].Preferred = out[i].Affinity.Count() == narrowest
	}
	if out == nil {
		out = []topologymanager.Hint{}
	}
	return map[string][]topologymanager.Hint{string(corev1.ResourceCPU): out}
}

// release gives a pod's exclusive CPUs back to the shared pool.
func (p *static) release(s *State, uid types.UID) {
	for _, cpus := range s.Assignments[uid] {
		s.Default = s.Default.Union(cpus)
	}
	delete(s.Assignments, uid)
}

// clone is a deep copy of the state.
func (s State) clone() State {
	out := State{Default: s.Default.Clone(), Assignments: map[types.UID]map[string]cpuset.CPUSet{}}
	for uid, cs := range s.Assignments {
		out.Assignments[uid] = maps.Clone(cs)
	}
	return out
}
