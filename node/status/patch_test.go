package status

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestPatch(t *testing.T) {
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt(1)}
	lb := corev1.PodCondition{Type: "example.com/lb", Status: corev1.ConditionTrue, LastTransitionTime: mt(0)}
	for _, tc := range []struct {
		name      string
		old, next corev1.PodStatus
		want      string
		unchanged bool
	}{
		{
			name:      "same status: only the precondition",
			old:       corev1.PodStatus{Phase: corev1.PodRunning},
			next:      corev1.PodStatus{Phase: corev1.PodRunning},
			want:      `{"metadata":{"uid":"u1"}}`,
			unchanged: true,
		},
		{
			name: "phase and message",
			old:  corev1.PodStatus{Phase: corev1.PodPending},
			next: corev1.PodStatus{Phase: corev1.PodRunning, Message: "m"},
			want: `{"metadata":{"uid":"u1"},"status":{"message":"m","phase":"Running"}}`,
		},
		{
			name: "a cleared field is deleted",
			old:  corev1.PodStatus{Phase: corev1.PodRunning, Reason: "r"},
			next: corev1.PodStatus{Phase: corev1.PodRunning},
			want: `{"metadata":{"uid":"u1"},"status":{"reason":null}}`,
		},
		{
			name: "one condition changed: merged by type, others untouched",
			old:  corev1.PodStatus{Conditions: []corev1.PodCondition{lb}},
			next: corev1.PodStatus{Conditions: []corev1.PodCondition{lb, ready}},
			want: `{"metadata":{"uid":"u1"},"status":{"$setElementOrder/conditions":[{"type":"example.com/lb"},{"type":"Ready"}],` +
				`"conditions":[{"lastProbeTime":null,"lastTransitionTime":"2026-01-01T00:00:01Z","status":"True","type":"Ready"}]}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, unchanged, err := Patch("u1", tc.old, tc.next)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(decode(t, tc.want), decode(t, string(got))); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
			if unchanged != tc.unchanged {
				t.Errorf("unchanged = %v, want %v", unchanged, tc.unchanged)
			}
		})
	}
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return m
}
