package cpumanager

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Policy names (--cpu-manager-policy).
const (
	PolicyNone   = "none"
	PolicyStatic = "static"
)

// OptionFullPCPUsOnly is the static policy option that hands out whole
// physical cores only (--cpu-manager-policy-options=full-pcpus-only=true).
const OptionFullPCPUsOnly = "full-pcpus-only"

// Admission reasons, as the kubelet's.
const (
	ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"
	ReasonSMTAlignmentError        = "SMTAlignmentError"
)

// Rejection is why a pod cannot get its CPUs: the pod fails admission
// with this reason and message.
type Rejection struct {
	Reason, Message string
}

func (r *Rejection) Error() string { return r.Message }

// unexpected wraps an allocation failure as the kubelet words it.
func unexpected(err error) *Rejection {
	return &Rejection{Reason: ReasonUnexpectedAdmissionError, Message: fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)}
}

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

// allocate gives each container of pod that needs them its exclusive
// CPUs, init containers first: the CPUs of an init container (not a
// sidecar) are offered again to the containers after it, as the kubelet
// reuses them. A container that has CPUs already keeps them. On error
// the state is unchanged.
func (p *static) allocate(s *State, pod *corev1.Pod) *Rejection {
	before := s.clone()
	reuse := cpuset.New()
	containers := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for i := range containers {
		c := &containers[i]
		n := GuaranteedCPUs(pod, c)
		if n == 0 {
			continue
		}
		cpus, ok := s.get(pod.UID, c.Name)
		if !ok {
			var rej *Rejection
			if cpus, rej = p.take(s, n, reuse); rej != nil {
				*s = before
				return rej
			}
			s.Default = s.Default.Difference(cpus)
			s.set(pod.UID, c.Name, cpus)
		}
		if i < len(pod.Spec.InitContainers) && !podutil.IsSidecar(c) {
			reuse = reuse.Union(cpus)
		} else {
			reuse = reuse.Difference(cpus)
		}
	}
	return nil
}

// take chooses n CPUs from the shared pool (less the reserved ones) and
// the reusable ones.
func (p *static) take(s *State, n int, reuse cpuset.CPUSet) (cpuset.CPUSet, *Rejection) {
	avail := s.Default.Difference(p.reserved).Union(reuse)
	if p.fullPCPUsOnly {
		perCore := p.topo.CPUsPerCore()
		if n%perCore != 0 {
			return cpuset.New(), &Rejection{Reason: ReasonSMTAlignmentError,
				Message: fmt.Sprintf("SMT Alignment Error: requested %d cpus not multiple cpus per core = %d", n, perCore)}
		}
		avail = avail.Difference(p.reservedCores)
		if whole := p.topo.wholeCores(avail); whole.Size() < n {
			return cpuset.New(), &Rejection{Reason: ReasonSMTAlignmentError,
				Message: fmt.Sprintf("SMT Alignment Error: not enough free physical CPUs: available physical CPUs = %d, requested CPUs = %d, CPUs per core = %d", whole.Size(), n, perCore)}
		}
		avail = p.topo.wholeCores(avail)
	}
	cpus, err := TakeByTopology(p.topo, avail, n)
	if err != nil {
		return cpuset.New(), unexpected(err)
	}
	return cpus, nil
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
