package podutil

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// SortByCreation sorts pods in place oldest first (creation timestamp),
// ties in ComparePods order: the order the kubelet admits pods in.
func SortByCreation(pods []*corev1.Pod) {
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return ComparePods(a, b)
	})
}
