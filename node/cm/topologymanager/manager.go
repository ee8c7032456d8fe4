package topologymanager

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/admission"
)

// Admission reasons, as the kubelet's.
const (
	ReasonTopologyAffinityError    = "TopologyAffinityError"
	ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"
	// MessageTopologyAffinityError is the kubelet's message.
	MessageTopologyAffinityError = "Resources cannot be allocated with Topology locality"
)

// Provider is a resource manager that places containers on NUMA nodes.
type Provider interface {
	// Hints are the placements container c of pod could get now, by
	// resource; nil: no preference.
	Hints(pod *corev1.Pod, c *corev1.Container) map[string][]Hint
	// Allocate gives c its resources within the chosen affinity. An
	// error with a Reason of its own refuses the pod with that reason.
	Allocate(pod *corev1.Pod, c *corev1.Container, affinity Hint) error
	// Release gives back everything the pod holds.
	Release(pod *corev1.Pod)
}

// Reasoned is an allocation error that names its admission reason.
type Reasoned interface {
	error
	Reason() string
}

// Manager runs a policy over the providers.
type Manager struct {
	policy string
	nodes  []int
}

// New builds a topology manager for the machine's NUMA nodes.
func New(policy string, nodes []int) (*Manager, error) {
	if policy == "" {
		policy = PolicyNone
	}
	if !ValidPolicy(policy) {
		return nil, fmt.Errorf("unknown topology manager policy %q (none, best-effort, restricted or single-numa-node)", policy)
	}
	if len(nodes) > 8 && policy != PolicyNone {
		return nil, fmt.Errorf("unsupported on machines with more than 8 NUMA nodes (this one has %d)", len(nodes))
	}
	return &Manager{policy: policy, nodes: slices.Clone(nodes)}, nil
}

// Admit places the pod's containers, init containers first, each by the
// merged hints of the providers (container scope), and allocates them; a
// refusal releases what the pod got and says why.
func (m *Manager) Admit(pod *corev1.Pod, providers ...Provider) admission.Decision {
	containers := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for i := range containers {
		c := &containers[i]
		affinity := Hint{Preferred: true}
		if m.policy != PolicyNone {
			var hints []map[string][]Hint
			for _, p := range providers {
				hints = append(hints, p.Hints(pod, c))
			}
			var ok bool
			if affinity, ok = Merge(m.policy, m.nodes, hints); !ok {
				release(pod, providers)
				return admission.Decision{Reason: ReasonTopologyAffinityError, Message: MessageTopologyAffinityError}
			}
		}
		for _, p := range providers {
			if err := p.Allocate(pod, c, affinity); err != nil {
				release(pod, providers)
				var r Reasoned
				if errors.As(err, &r) {
					return admission.Decision{Reason: r.Reason(), Message: r.Error()}
				}
				return admission.Decision{Reason: ReasonUnexpectedAdmissionError, Message: fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)}
			}
		}
	}
	return admission.Decision{}
}

func release(pod *corev1.Pod, providers []Provider) {
	for _, p := range providers {
		p.Release(pod)
	}
}

func sortedKeys(m map[string][]Hint) []string { return slices.Sorted(maps.Keys(m)) }
