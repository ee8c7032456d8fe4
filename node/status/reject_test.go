package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestReject: a rejected pod's status is upstream's rejectPod status:
// phase, reason, prefixed message, QoS class, observed generation and a
// start time (the previous one when there is one); the conditions others
// own are kept, the agent's own, container statuses and addresses are not.
func TestReject(t *testing.T) {
	gate := corev1.PodCondition{Type: "example.com/lb", Status: corev1.ConditionTrue, LastTransitionTime: mt(1)}
	tests := []struct {
		name string
		prev corev1.PodStatus
		want corev1.PodStatus
	}{
		{"first status", corev1.PodStatus{}, corev1.PodStatus{
			Phase: corev1.PodFailed, Reason: "NodeAffinity", Message: "Pod was rejected: Predicate NodeAffinity failed: x",
			QOSClass: corev1.PodQOSBestEffort, ObservedGeneration: 3, StartTime: ptr(mt(9)),
		}},
		{"after an earlier status", corev1.PodStatus{
			Phase: corev1.PodPending, StartTime: ptr(mt(2)), HostIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{gate, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		}, corev1.PodStatus{
			Phase: corev1.PodFailed, Reason: "NodeAffinity", Message: "Pod was rejected: Predicate NodeAffinity failed: x",
			QOSClass: corev1.PodQOSBestEffort, ObservedGeneration: 3, StartTime: ptr(mt(2)), Conditions: []corev1.PodCondition{gate},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod(corev1.RestartPolicyAlways, "app")
			pod.Generation = 3
			pod.Status = tc.prev
			got := Reject(pod, "NodeAffinity", "Predicate NodeAffinity failed: x", at(9))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Reject (-want +got):\n%s", diff)
			}
		})
	}
}
