package podutil

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// IsTerminal reports whether phase is final: Succeeded or Failed.
func IsTerminal(phase corev1.PodPhase) bool {
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}

// ComparePods orders pods by namespace, then name, then UID (so two
// instances of one name have a fixed order too); it returns -1, 0 or +1.
func ComparePods(a, b *corev1.Pod) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
}

// SortPods sorts pods in place in ComparePods order.
func SortPods(pods []*corev1.Pod) {
	slices.SortFunc(pods, ComparePods)
}
