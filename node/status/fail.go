package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fail returns s of a pod the agent fails while its containers may still
// run (an eviction): phase Failed with reason and message, cond set in
// place of any condition of its type, and Ready and ContainersReady False
// with reason PodFailed. Container statuses are left as they are; the
// pod's termination finalizes them.
func Fail(s corev1.PodStatus, reason, message string, cond corev1.PodCondition, now time.Time) corev1.PodStatus {
	out := *s.DeepCopy()
	out.Phase, out.Reason, out.Message = corev1.PodFailed, reason, message
	t := metav1.NewTime(now)
	set := false
	for i := range out.Conditions {
		c := &out.Conditions[i]
		switch c.Type {
		case cond.Type:
			if c.Status != cond.Status {
				cond.LastTransitionTime = t
			} else {
				cond.LastTransitionTime = c.LastTransitionTime
			}
			*c, set = cond, true
		case corev1.PodReady, corev1.ContainersReady:
			if c.Status != corev1.ConditionFalse {
				c.LastTransitionTime = t
			}
			c.Status, c.Reason, c.Message = corev1.ConditionFalse, terminalReason(corev1.PodFailed), ""
		}
	}
	if !set {
		cond.LastTransitionTime = t
		out.Conditions = append(out.Conditions, cond)
	}
	return out
}
