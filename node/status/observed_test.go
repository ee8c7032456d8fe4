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

// TestUnknownEndMessages: a container whose end is unknown is reported
// with upstream's messages: one the runtime lost while running, one in
// an unknown state, one a terminated pod never saw finish.
func TestUnknownEndMessages(t *testing.T) {
	pod := newPod(corev1.RestartPolicyAlways, "app")
	running := Generate(pod, world(true, running("app", "c1", 0, 1)), nil, nil, node, at(2))

	pod.Status = running
	lost := Generate(pod, world(true), nil, nil, node, at(3))
	if got := lost.ContainerStatuses[0].LastTerminationState.Terminated; got == nil || got.Message != MessageUnknownRunning || got.ExitCode != 137 {
		t.Errorf("lost while running: last termination %+v, want 137 %q", got, MessageUnknownRunning)
	}
	unknownState := Generate(pod, world(true, unknown("app", "c1", 0, 1)), nil, nil, node, at(3))
	if got := unknownState.ContainerStatuses[0].State.Terminated; got == nil || got.Message != MessageUnknownAtTermination {
		t.Errorf("unknown state: %+v, want %q", got, MessageUnknownAtTermination)
	}
	ended := Terminate(pod, running, at(4))
	if got := ended.ContainerStatuses[0].State.Terminated; got == nil || got.Message != MessageUnknownAtTermination || got.ExitCode != 137 {
		t.Errorf("never seen to finish: %+v, want 137 %q", got, MessageUnknownAtTermination)
	}
}
