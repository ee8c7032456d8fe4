package podutil

import corev1 "k8s.io/api/core/v1"

// IsSidecar reports whether c is a restartable init container (an init
// container with restartPolicy Always).
func IsSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// ShouldRestart reports whether container c of pod, having exited with
// exitCode, runs again in the same pod. init says c is one of the pod's
// init containers. A sidecar always runs again; any other init container
// only after a failure and unless the pod's restartPolicy is Never; a
// regular container as the pod's restartPolicy says (Always or unset: yes;
// OnFailure: after a non-zero exit; Never: no).
func ShouldRestart(pod *corev1.Pod, c *corev1.Container, init bool, exitCode int32) bool {
	if init {
		if IsSidecar(c) {
			return true
		}
		return exitCode != 0 && pod.Spec.RestartPolicy != corev1.RestartPolicyNever
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}
