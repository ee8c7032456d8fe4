package podadmit

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/shutdown"
)

// Steps are the parts of the node the admission chain asks, in order.
type Steps struct {
	// Pressure are the node's pressure conditions (the eviction manager's).
	Pressure []corev1.NodeConditionType
	// ShuttingDown: graceful node shutdown is under way.
	ShuttingDown bool
	// AppArmor: the host has AppArmor enabled (deps.MachineInfo.AppArmor).
	AppArmor bool
	// Declared are the node features the node declares
	// (nodestatus.DeclaredFeatures).
	Declared []string
	// Node is the node as admission sees it (NodeView.AdmissionNode).
	Node func() admission.Node
	// FreshNode reads the Node from the API now (ok false: it could not).
	FreshNode func() (*corev1.Node, bool)
	// Fits decides on the pod against node beside the admitted pods
	// (Book.Fits).
	Fits func(pod *corev1.Pod, node admission.Node) admission.Decision
	// Admitted are the admitted pods, oldest first (preemption's victims
	// are chosen among them).
	Admitted func() []*corev1.Pod
	// Preempt stops the victims so that pod fits.
	Preempt func(pod *corev1.Pod, victims []*corev1.Pod)
	// Devices allocates the pod's devices (nil: no device manager).
	Devices func(pod *corev1.Pod) admission.Decision
	// Resources places the pod's containers on CPUs and NUMA nodes.
	Resources func(pod *corev1.Pod) admission.Decision
}

// Decide is the kubelet's admission of a pod new to the node, in its
// order: node pressure, then AppArmor (a pod asking for a profile on a
// host without AppArmor; as the kubelet's, it wins over a shutdown under
// way), then (unless shutting down, which refuses every other pod) the
// node features the pod needs (the kubelet checks AppArmor and features
// after the resources; here they come first, so that a pod refused for
// either never preempts anyone), the node's labels, taints and resources beside
// the admitted pods, read again from the API before refusing for node
// affinity or taints (the copy may be a moment behind); a pod that does not fit may preempt
// admitted pods (critical pods only); then CPUs and memory. Devices come
// before the node's resources, as the kubelet's device manager answers
// before its predicates (its extended resources the manager does not
// know are the node's allocatable's to decide, as upstream's).
func Decide(pod *corev1.Pod, s Steps) admission.Decision {
	d := admission.AdmitUnderPressure(pod, podspec.QOSClass(pod), s.Pressure)
	if d.Admitted() {
		d = admission.AdmitAppArmor(pod, s.AppArmor)
	}
	if s.ShuttingDown && d.Reason != admission.ReasonAppArmor {
		d = admission.Decision{Reason: shutdown.NotAdmittedReason, Message: shutdown.NotAdmittedMessage}
	}
	if !d.Admitted() {
		return d
	}
	if d := admission.AdmitDeclaredFeatures(pod, s.Declared); !d.Admitted() {
		return d
	}
	// Devices before the node's fit, as the kubelet's device manager
	// allocates in the handler before its predicates: a resource whose
	// plugin has no healthy device, or none at all while pods hold its
	// devices, is UnexpectedAdmissionError, not OutOf<resource>, and a
	// pod refused for devices preempts nobody.
	if s.Devices != nil {
		if d := s.Devices(pod); !d.Admitted() {
			return d
		}
	}
	node := s.Node()
	d = s.Fits(pod, node)
	if d.Reason == admission.ReasonNodeAffinity || d.Reason == admission.ReasonTaintToleration {
		if fresh, ok := s.FreshNode(); ok {
			node.Labels, node.Taints = fresh.Labels, fresh.Spec.Taints
			d = s.Fits(pod, node)
		}
	}
	if !d.Admitted() {
		// Only a pod that does not fit needs the admitted pods listed.
		victims, ok := admission.PodsToPreempt(pod, podspec.QOSClass, node, s.Admitted())
		if !ok {
			return d
		}
		s.Preempt(pod, victims)
	}
	return s.Resources(pod)
}
