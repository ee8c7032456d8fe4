package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestReadinessGateMessages: the Ready condition's message for readiness
// gates not met is upstream's text (status/generate.go
// GeneratePodReadyCondition), the gates joined by ", ".
func TestReadinessGateMessages(t *testing.T) {
	pod := newPod(corev1.RestartPolicyAlways, "a")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}, {ConditionType: "example.com/lb"}}
	pod.Status.Conditions = []corev1.PodCondition{{Type: "example.com/lb", Status: corev1.ConditionFalse}}
	s := Generate(pod, world(true, running("a", "ca", 0, 1)), nil, nil, node, at(5))
	got := condStatus(s, corev1.PodReady)
	want := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: ReasonReadinessGatesNotReady,
		Message: `corresponding condition of pod readiness gate "example.com/ready" does not exist., ` +
			`the status of pod readiness gate "example.com/lb" is not "True", but False`}
	if diff := cmp.Diff(want, *got, cmpCondition); diff != "" {
		t.Errorf("Ready (-want +got):\n%s", diff)
	}
}

// cmpCondition compares conditions without their times and generation.
var cmpCondition = cmp.Transformer("condition", func(c corev1.PodCondition) corev1.PodCondition {
	c.LastTransitionTime, c.LastProbeTime, c.ObservedGeneration = corev1.PodCondition{}.LastTransitionTime, corev1.PodCondition{}.LastProbeTime, 0
	return c
})

func TestNeedsReadinessReconcile(t *testing.T) {
	const gateMissing = `corresponding condition of pod readiness gate "example.com/lb" does not exist.`
	const gateFalse = `the status of pod readiness gate "example.com/lb" is not "True", but False`
	c := func(t corev1.PodConditionType, st corev1.ConditionStatus, msg string) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: st, Message: msg}
	}
	const T, F = corev1.ConditionTrue, corev1.ConditionFalse
	tests := []struct {
		name  string
		gates bool
		conds []corev1.PodCondition
		want  bool
	}{
		{"no gates", false, []corev1.PodCondition{c(corev1.ContainersReady, T, ""), c(corev1.PodReady, F, "x")}, false},
		{"gate missing, as written", true, []corev1.PodCondition{c(corev1.ContainersReady, T, ""), c(corev1.PodReady, F, gateMissing)}, false},
		{"gate set True since", true, []corev1.PodCondition{c("example.com/lb", T, ""), c(corev1.ContainersReady, T, ""), c(corev1.PodReady, F, gateMissing)}, true},
		{"gate set False since: same status, new message", true, []corev1.PodCondition{c("example.com/lb", F, ""), c(corev1.ContainersReady, T, ""), c(corev1.PodReady, F, gateMissing)}, true},
		{"gate False, as written", true, []corev1.PodCondition{c("example.com/lb", F, ""), c(corev1.ContainersReady, T, ""), c(corev1.PodReady, F, gateFalse)}, false},
		{"gate cleared since", true, []corev1.PodCondition{c(corev1.ContainersReady, T, ""), c(corev1.PodReady, T, "")}, true},
		{"containers not ready", true, []corev1.PodCondition{c("example.com/lb", T, ""), c(corev1.ContainersReady, F, "m"), c(corev1.PodReady, F, "m")}, false},
		{"no Ready condition yet", true, []corev1.PodCondition{c(corev1.ContainersReady, T, "")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod(corev1.RestartPolicyAlways, "a")
			if tc.gates {
				pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
			}
			pod.Status.Conditions = tc.conds
			if got := NeedsReadinessReconcile(pod); got != tc.want {
				t.Errorf("NeedsReadinessReconcile = %v, want %v", got, tc.want)
			}
		})
	}
}
