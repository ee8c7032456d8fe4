package allocation

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/lockstep-dev/lockstep/node/admission"
)

// Resize condition reasons and event reasons, as the kubelet's.
const (
	// ReasonDeferred: the resize does not fit now; it is retried when
	// resources free up.
	ReasonDeferred = corev1.PodReasonDeferred
	// ReasonInfeasible: the node cannot carry the resize out at all.
	ReasonInfeasible = corev1.PodReasonInfeasible
	// ReasonError: carrying an accepted resize out failed (the
	// PodResizeInProgress condition's reason); it is retried.
	ReasonError = corev1.PodReasonError

	EventResizeDeferred   = "ResizeDeferred"
	EventResizeInfeasible = "ResizeInfeasible"
	EventResizeStarted    = "ResizeStarted"
	EventResizeCompleted  = "ResizeCompleted"
	EventResizeError      = "ResizeError"
)

// MessagePodLevelUnsupported is the Infeasible message of a resize of
// pod-level resources, which this node does not carry out in place.
const MessagePodLevelUnsupported = "In-place resize of pod-level resources is not supported by this node"

// Verdict is the decision on a pod whose spec asks for other resources
// than it has been allocated.
type Verdict struct {
	// Resize: the spec's resources differ from the allocation.
	Resize bool
	// Allocate: the resize fits; the spec's resources become the
	// allocation.
	Allocate bool
	// Reason (Deferred or Infeasible) and Message of the PodResizePending
	// condition when the resize waits; AdmitReason is the admission's own
	// reason (OutOfcpu, …) that the event names.
	Reason, Message, AdmitReason string
}

// Decide judges the resize of desired (the pod as its spec asks) against
// allocated (the same pod with its allocated resources), on node beside
// others (the other admitted pods, with their allocations), as the
// kubelet's allocation manager: a resize of pod-level resources is
// Infeasible here; one whose requests do not fit beside the others is
// Deferred, with the admission's message ("Node didn't have enough
// resource: cpu, requested: …"), also when it would exceed the node's
// allocatable (the apiserver refuses those: it checks the node's
// allocatable before accepting a resize). The QoS class is not checked:
// the apiserver refuses a resize that would change it.
func Decide(desired, allocated *corev1.Pod, node admission.Node, others []*corev1.Pod) Verdict {
	if !Requested(desired, allocated) {
		return Verdict{}
	}
	if !equality.Semantic.DeepEqual(desired.Spec.Resources, allocated.Spec.Resources) {
		return Verdict{Resize: true, Reason: ReasonInfeasible, AdmitReason: ReasonInfeasible, Message: MessagePodLevelUnsupported}
	}
	if d := admission.AdmitResources(desired, node, others); !d.Admitted() {
		return Verdict{Resize: true, Reason: ReasonDeferred, AdmitReason: d.Reason, Message: d.Message}
	}
	return Verdict{Resize: true, Allocate: true}
}

// EventMessage is the message of the kubelet's resize events: what
// (Pod resize started, Pod resize Deferred, …), then a JSON summary of
// pod's containers' resources, the generation and the error, if any:
// `Pod resize started: {"containers":[{"name":"c","resources":{…}}],"generation":2}`.
func EventMessage(what string, pod *corev1.Pod, generation int64, errMsg string) string {
	type container struct {
		Name      string                      `json:"name"`
		Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	}
	type summary struct {
		InitContainers []container `json:"initContainers,omitempty"`
		Containers     []container `json:"containers,omitempty"`
		Generation     int64       `json:"generation"`
		Error          string      `json:"error,omitempty"`
	}
	s := summary{Generation: generation, Error: errMsg}
	for _, c := range pod.Spec.InitContainers {
		s.InitContainers = append(s.InitContainers, container{c.Name, c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		s.Containers = append(s.Containers, container{c.Name, c.Resources})
	}
	data, err := json.Marshal(s)
	if err != nil {
		return what
	}
	return fmt.Sprintf("%s: %s", what, data)
}

// Requested reports whether desired asks for other resources than
// allocated holds: a resize.
func Requested(desired, allocated *corev1.Pod) bool {
	return !equality.Semantic.DeepEqual(Of(desired), Of(allocated)) || !equality.Semantic.DeepEqual(desired.Spec.Resources, allocated.Spec.Resources)
}
