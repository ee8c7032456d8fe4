package agent

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/admission"
)

// AdmitForTest runs admission on pod, as a config update of a new pod
// does, and reports whether the pod is admitted.
func (a *Agent) AdmitForTest(pod *corev1.Pod) bool {
	a.admit(pod)
	return a.admission.book.IsAdmitted(pod.UID)
}

// ForgetAdmissionForTest drops pod uid from the admitted pods, as its
// termination does.
func (a *Agent) ForgetAdmissionForTest(uid types.UID) { a.forgetAdmission(uid) }

// SeedAdmittedForTest records pod as admitted without deciding (what an
// admission that admits it records), to set up a node with many pods
// cheaply.
func (a *Agent) SeedAdmittedForTest(pod *corev1.Pod) {
	a.admission.book.Record(pod, admission.Decision{})
	a.recordAllocation(pod)
}
