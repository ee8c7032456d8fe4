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
// only after a failure, and then as its own policy says; a regular
// container as its own policy says (see restartsAfterExit: its
// restartPolicyRules, then its restartPolicy, then the pod's).
func ShouldRestart(pod *corev1.Pod, c *corev1.Container, init bool, exitCode int32) bool {
	if init {
		if IsSidecar(c) {
			return true
		}
		return exitCode != 0 && restartsAfterExit(pod, c, exitCode)
	}
	return restartsAfterExit(pod, c, exitCode)
}

// restartsAfterExit applies a container's own restart policy, as upstream
// does with the ContainerRestartRules feature (on by default): when the
// container sets a restartPolicy, its first restartPolicyRules rule that
// matches the exit code decides (action Restart: yes); else its
// restartPolicy (Always: yes; OnFailure: after a non-zero exit; Never:
// no). A container without its own policy follows the pod's (Always or
// unset: yes; OnFailure: after a non-zero exit; Never: no).
func restartsAfterExit(pod *corev1.Pod, c *corev1.Container, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if rule, ok := MatchingRestartRule(c, exitCode); ok && rule.Action == corev1.ContainerRestartRuleActionRestart {
			return true
		}
		switch *c.RestartPolicy {
		case corev1.ContainerRestartPolicyAlways:
			return true
		case corev1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case corev1.ContainerRestartPolicyNever:
			return false
		}
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

// MatchingRestartRule returns the first of c's restartPolicyRules whose
// exit code condition holds for exitCode (operator In: the code is listed;
// NotIn: it is not). Rules with another condition never match.
func MatchingRestartRule(c *corev1.Container, exitCode int32) (corev1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		on := rule.ExitCodes
		if on == nil {
			continue
		}
		listed := false
		for _, v := range on.Values {
			if v == exitCode {
				listed = true
			}
		}
		switch on.Operator {
		case corev1.ContainerRestartRuleOnExitCodesOpIn:
			if listed {
				return rule, true
			}
		case corev1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !listed {
				return rule, true
			}
		}
	}
	return corev1.ContainerRestartRule{}, false
}

// RestartsAfterKill reports whether container c of pod runs again after
// the agent killed it (a failed liveness or startup probe, an unknown
// state): no exit code decides, so only the restart policies do: a
// sidecar always; a container with its own restartPolicy unless it is
// Never; any other as long as the pod's restartPolicy is not Never.
func RestartsAfterKill(pod *corev1.Pod, c *corev1.Container, init bool) bool {
	switch {
	case init && IsSidecar(c):
		return true
	case c.RestartPolicy != nil:
		return *c.RestartPolicy != corev1.ContainerRestartPolicyNever
	}
	return pod.Spec.RestartPolicy != corev1.RestartPolicyNever
}

// MayRestart reports whether regular container c of pod could ever run
// again after it exited, for some exit code: a rule that restarts, a
// restartPolicy of its own other than Never, or else a pod restartPolicy
// other than Never.
func MayRestart(pod *corev1.Pod, c *corev1.Container) bool {
	if c.RestartPolicy != nil {
		for _, rule := range c.RestartPolicyRules {
			if rule.Action == corev1.ContainerRestartRuleActionRestart {
				return true
			}
		}
		return *c.RestartPolicy != corev1.ContainerRestartPolicyNever
	}
	return pod.Spec.RestartPolicy != corev1.RestartPolicyNever
}

// RunsOnce reports whether none of pod's regular containers could run
// again after exiting (MayRestart): such a pod whose containers ran is
// never given a new sandbox.
func RunsOnce(pod *corev1.Pod) bool {
	for i := range pod.Spec.Containers {
		if MayRestart(pod, &pod.Spec.Containers[i]) {
			return false
		}
	}
	return true
}
