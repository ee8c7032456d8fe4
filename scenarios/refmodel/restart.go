package refmodel

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Restarts reports whether regular container c of pod runs again after
// exiting with exitCode, as upstream decides with container restart rules
// (on by default): when c sets its own restartPolicy, its first
// restartPolicyRules rule matching the exit code decides (Restart: yes),
// else its own policy (Always: yes, OnFailure: when the code is not 0,
// Never: no); without one, the pod's restartPolicy decides the same way
// (unset is Always).
func Restarts(pod *corev1.Pod, c *corev1.Container, exitCode int32) bool {
	policy := corev1.ContainerRestartPolicy(pod.Spec.RestartPolicy)
	if c.RestartPolicy != nil {
		for _, rule := range c.RestartPolicyRules {
			if ruleMatches(rule, exitCode) {
				return rule.Action == corev1.ContainerRestartRuleActionRestart
			}
		}
		policy = *c.RestartPolicy
	}
	switch policy {
	case corev1.ContainerRestartPolicyNever:
		return false
	case corev1.ContainerRestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// ruleMatches reports whether rule's exit code condition holds for code.
func ruleMatches(rule corev1.ContainerRestartRule, code int32) bool {
	on := rule.ExitCodes
	if on == nil {
		return false
	}
	listed := slices.Contains(on.Values, code)
	switch on.Operator {
	case corev1.ContainerRestartRuleOnExitCodesOpIn:
		return listed
	case corev1.ContainerRestartRuleOnExitCodesOpNotIn:
		return !listed
	}
	return false
}

// MayRunAgain reports whether regular container c of pod could run again
// after some exit: Restarts holds for some exit code.
func MayRunAgain(pod *corev1.Pod, c *corev1.Container) bool {
	codes := []int32{0, 1}
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes != nil {
			codes = append(codes, rule.ExitCodes.Values...)
		}
	}
	// Codes no rule lists behave alike; 1 stands for them unless listed,
	// so try one more code outside every list.
	unlisted := int32(2)
	for slices.Contains(codes, unlisted) {
		unlisted++
	}
	codes = append(codes, unlisted)
	return slices.ContainsFunc(codes, func(code int32) bool { return Restarts(pod, c, code) })
}

// RunsOnce reports whether none of pod's regular containers could run
// again after exiting: such a pod, once its containers ran, never gets a
// new sandbox or container instance.
func RunsOnce(pod *corev1.Pod) bool {
	for i := range pod.Spec.Containers {
		if MayRunAgain(pod, &pod.Spec.Containers[i]) {
			return false
		}
	}
	return true
}
