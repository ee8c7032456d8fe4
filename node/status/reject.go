package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// RejectedPrefix starts the status message of a pod that failed
// admission, before admission's own message (upstream's rejectPod).
const RejectedPrefix = "Pod was rejected: "

// Reject returns the status of a pod that failed admission and will never
// run, as upstream's rejectPod writes it: phase Failed, the reason, the
// message after RejectedPrefix, the QoS class, the pod's generation as
// observed and a start time; no container statuses (none ever ran), no
// conditions of the agent's own and no addresses. pod carries the
// previous status (Manager.WithCachedStatus), whose start time and the
// conditions others own are kept.
func Reject(pod *corev1.Pod, reason, message string, now time.Time) corev1.PodStatus {
	prev := &pod.Status
	s := corev1.PodStatus{
		Phase:              corev1.PodFailed,
		Reason:             reason,
		Message:            RejectedPrefix + message,
		QOSClass:           podspec.QOSClass(pod),
		ObservedGeneration: pod.Generation,
		StartTime:          &metav1.Time{Time: now},
	}
	if prev.StartTime != nil {
		s.StartTime = prev.StartTime.DeepCopy()
	}
	for _, c := range prev.Conditions {
		if !IsKubeletCondition(c.Type) {
			s.Conditions = append(s.Conditions, *c.DeepCopy())
		}
	}
	return s
}
