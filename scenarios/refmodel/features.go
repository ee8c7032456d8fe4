package refmodel

import (
	corev1 "k8s.io/api/core/v1"
)

// FeatureRestartAllContainers is the node-declared feature a
// RestartAllContainers restart rule needs (v1.37's registry name).
const FeatureRestartAllContainers = "RestartAllContainersOnContainerExits"

// NodeFeaturesNeeded lists the node-declared features a new pod needs to
// be admitted, as v1.37's registry infers them for scheduling and the
// kubelet's admission: a restartPolicyRules rule of any container (init
// or regular) with action RestartAllContainers needs
// RestartAllContainersOnContainerExits. (The resize features are needed
// only by updates; the user-namespace, DRA and mount-option ones by fields
// the simulator's pods never set.)
func NodeFeaturesNeeded(pod *corev1.Pod) []string {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, rule := range c.RestartPolicyRules {
				if rule.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
					return []string{FeatureRestartAllContainers}
				}
			}
		}
	}
	return nil
}
