package refmodel

import corev1 "k8s.io/api/core/v1"

// The annotations by which the kubelet tells static and mirror pods, as
// upstream names them (pkg/kubelet/types).
const (
	annotationConfigSource = "kubernetes.io/config.source"
	annotationConfigMirror = "kubernetes.io/config.mirror"
	sourceAPI              = "api"
)

// SystemCriticalPriority is the least priority of a system-critical pod
// (upstream's scheduling.SystemCriticalPriority, 2 billion).
const SystemCriticalPriority int32 = 2_000_000_000

// DefaultGracePeriodSeconds is the API's default termination grace
// period.
const DefaultGracePeriodSeconds int64 = 30

// Priority is pod's spec.priority, 0 when unset.
func Priority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority == nil {
		return 0
	}
	return *pod.Spec.Priority
}

// IsStatic reports whether pod came from a static source (its config
// source annotation names one other than the API).
func IsStatic(pod *corev1.Pod) bool {
	src, ok := pod.Annotations[annotationConfigSource]
	return ok && src != sourceAPI
}

// IsMirror reports whether pod is the API's mirror of a static pod.
func IsMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[annotationConfigMirror]
	return ok
}

// IsCritical is upstream's IsCriticalPod: a static or mirror pod, or one
// of at least system-critical priority. The eviction manager never evicts
// such a pod (for node pressure or local storage).
func IsCritical(pod *corev1.Pod) bool {
	return IsStatic(pod) || IsMirror(pod) || Priority(pod) >= SystemCriticalPriority
}

// IsTerminal reports whether phase is Succeeded or Failed.
func IsTerminal(phase corev1.PodPhase) bool {
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}

// SpecGracePeriod is the grace period pod's spec asks for, in seconds
// (the API default when unset).
func SpecGracePeriod(pod *corev1.Pod) int64 {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return DefaultGracePeriodSeconds
}

// IsSidecar reports whether c, an init container, is a sidecar: its own
// restartPolicy is Always.
func IsSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
