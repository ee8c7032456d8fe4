package podutil

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// ContainerFieldPath is the field path events about container name of pod
// carry, as upstream writes it: spec.initContainers{name},
// spec.ephemeralContainers{name} or spec.containers{name}.
func ContainerFieldPath(pod *corev1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return fmt.Sprintf("spec.initContainers{%s}", name)
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return fmt.Sprintf("spec.ephemeralContainers{%s}", name)
		}
	}
	return fmt.Sprintf("spec.containers{%s}", name)
}
