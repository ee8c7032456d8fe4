package podutil

import corev1 "k8s.io/api/core/v1"

// DefaultGracePeriodSeconds is the termination grace period of a pod whose
// spec sets none: the API's default, 30 s.
const DefaultGracePeriodSeconds int64 = 30

// SpecGracePeriod is the termination grace period pod's spec asks for, in
// seconds: spec.terminationGracePeriodSeconds, else the default.
func SpecGracePeriod(pod *corev1.Pod) int64 {
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return DefaultGracePeriodSeconds
}

// GracePeriod is the grace period pod's containers get when they are
// stopped, in seconds: the deletion's grace period once the pod is being
// deleted (it wins over the spec's), else SpecGracePeriod.
func GracePeriod(pod *corev1.Pod) int64 {
	if pod.DeletionGracePeriodSeconds != nil {
		return *pod.DeletionGracePeriodSeconds + brokenGraceSeconds
	}
	return SpecGracePeriod(pod)
}
