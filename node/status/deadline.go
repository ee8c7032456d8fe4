package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

// The status reason and message (and event reason and message) of a pod
// that ran longer than its activeDeadlineSeconds, as upstream words them.
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// ActiveDeadline returns how long a pod with start time start may still
// run before its spec.activeDeadlineSeconds (counted from the start time
// its status reports, as upstream counts it): negative or zero once past.
// ok is false when the pod has no deadline or no start time yet.
func ActiveDeadline(pod *corev1.Pod, start *time.Time, now time.Time) (left time.Duration, ok bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || start == nil || start.IsZero() {
		return 0, false
	}
	return start.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second).Sub(now), true
}

// DeadlineExceeded returns status s of a pod past its active deadline:
// phase Failed with reason DeadlineExceeded, Ready and ContainersReady
// False. Its containers are reported as the runtime holds them: they are
// killed next, and the pod's termination reports how they ended.
func DeadlineExceeded(pod *corev1.Pod, s corev1.PodStatus, rs *podstate.PodStatus, now time.Time) corev1.PodStatus {
	s.Phase, s.Reason, s.Message = corev1.PodFailed, ReasonDeadlineExceeded, MessageDeadlineExceeded
	s.Conditions = conditions(pod, &s, rs.SandboxChange(pod.Spec.HostNetwork), now)
	return s
}
