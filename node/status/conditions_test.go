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
