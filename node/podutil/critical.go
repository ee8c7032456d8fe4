package podutil

import corev1 "k8s.io/api/core/v1"

// SystemCriticalPriority is the priority from which a pod is critical
// (the system-cluster-critical and system-node-critical classes).
const SystemCriticalPriority = 2_000_000_000

// Priority is a pod's priority (0 when unset).
func Priority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// IsCriticalPod reports whether a pod is critical to the node, as the
// kubelet decides: a static or mirror pod, or a pod of system-critical
// priority. Critical pods are never evicted and are admitted under
// pressure.
func IsCriticalPod(pod *corev1.Pod) bool {
	return IsStaticPod(pod) || IsMirrorPod(pod) || Priority(pod) >= SystemCriticalPriority
}
