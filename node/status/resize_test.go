package status

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestResizeConditions walks a resize through the conditions: deferred,
// accepted, in progress, failing, completed.
func TestResizeConditions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) metav1.Time { return metav1.Time{Time: t0.Add(time.Duration(s) * time.Second)} }
	pending := corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: "Deferred", Message: "no room",
		ObservedGeneration: 2, LastProbeTime: at(0), LastTransitionTime: at(0)}
	progress := corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, ObservedGeneration: 2,
		LastProbeTime: at(5), LastTransitionTime: at(5)}
	failing := progress
	failing.Reason, failing.Message, failing.LastProbeTime = "Error", "boom", at(6)
	for _, tc := range []struct {
		name      string
		prev      []corev1.PodCondition
		r         Resize
		now       int
		want      []corev1.PodCondition
		completed int64
		ended     bool
	}{
		{"nothing", nil, Resize{}, 0, nil, 0, false},
		{"deferred", nil, Resize{PendingReason: "Deferred", PendingMessage: "no room"}, 0, []corev1.PodCondition{pending}, 0, false},
		{"still deferred keeps its times", []corev1.PodCondition{pending}, Resize{PendingReason: "Deferred", PendingMessage: "no room"}, 3,
			[]corev1.PodCondition{pending}, 0, false},
		{"accepted", []corev1.PodCondition{pending}, Resize{Allocated: true, InProgress: true}, 5, []corev1.PodCondition{progress}, 0, false},
		{"in progress keeps its times", []corev1.PodCondition{progress}, Resize{InProgress: true}, 9, []corev1.PodCondition{progress}, 0, false},
		{"failing", []corev1.PodCondition{progress}, Resize{InProgress: true, Error: "boom"}, 6, []corev1.PodCondition{failing}, 0, false},
		{"completed", []corev1.PodCondition{failing}, Resize{}, 7, nil, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, completed, ended := ResizeConditions(tc.prev, tc.r, 2, t0.Add(time.Duration(tc.now)*time.Second))
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("conditions (-want +got):\n%s", d)
			}
			if completed != tc.completed || ended != tc.ended {
				t.Errorf("completed %d %v, want %d %v", completed, ended, tc.completed, tc.ended)
			}
		})
	}
}
