package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestObserved(t *testing.T) {
	s := corev1.PodStatus{ObservedGeneration: 1, Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: "example.com/lb", ObservedGeneration: 0},
		{Type: corev1.PodReady, ObservedGeneration: 1},
		{Type: corev1.PodResizeInProgress, ObservedGeneration: 1},
		{Type: corev1.ContainersReady, ObservedGeneration: 1},
	}}
	gens := func(s corev1.PodStatus) []int64 {
		out := []int64{s.ObservedGeneration}
		for _, c := range s.Conditions {
			out = append(out, c.ObservedGeneration)
		}
		return out
	}
	// The agent's conditions follow; others' and the resize ones do not.
	if diff := cmp.Diff([]int64{2, 0, 2, 1, 2}, gens(Observed(s, 2))); diff != "" {
		t.Errorf("Observed(2) generations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{1, 0, 1, 1, 1}, gens(s)); diff != "" {
		t.Errorf("Observed changed its argument (-want +got):\n%s", diff)
	}
	s.ObservedGeneration = 3
	if got := Observed(s, 2).ObservedGeneration; got != 3 {
		t.Errorf("Observed lowered the generation to %d", got)
	}
}
