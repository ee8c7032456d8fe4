package nodestatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestConditionChanges(t *testing.T) {
	st := func(mem, disk, pid, ready corev1.ConditionStatus) *corev1.NodeStatus {
		s := &corev1.NodeStatus{}
		for _, c := range []struct {
			t  corev1.NodeConditionType
			st corev1.ConditionStatus
		}{{corev1.NodeMemoryPressure, mem}, {corev1.NodeDiskPressure, disk}, {corev1.NodePIDPressure, pid}, {corev1.NodeReady, ready}} {
			if c.st != "" {
				s.Conditions = append(s.Conditions, corev1.NodeCondition{Type: c.t, Status: c.st})
			}
		}
		return s
	}
	const T, F, U = corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown
	tests := []struct {
		name          string
		before, after *corev1.NodeStatus
		want          []string
	}{
		{"registered ready", nil, st(F, F, F, T),
			[]string{EventSufficientMemory, EventNoDiskPressure, EventSufficientPID, EventNodeReady}},
		{"registered not ready", nil, st(F, F, F, F),
			[]string{EventSufficientMemory, EventNoDiskPressure, EventSufficientPID, EventNodeNotReady}},
		{"nothing changed", st(F, F, F, T), st(F, F, F, T), nil},
		{"becomes ready", st(F, F, F, F), st(F, F, F, T), []string{EventNodeReady}},
		{"the node controller's Unknown", st(U, U, U, U), st(F, F, F, T),
			[]string{EventSufficientMemory, EventNoDiskPressure, EventSufficientPID, EventNodeReady}},
		{"memory and disk pressure", st(F, F, F, T), st(T, T, F, T), []string{EventInsufficientMemory, EventDiskPressure}},
		{"pressure ends", st(T, T, T, T), st(F, F, F, T), []string{EventSufficientMemory, EventNoDiskPressure, EventSufficientPID}},
		{"PID pressure, not ready", st(F, F, F, T), st(F, F, T, F), []string{EventInsufficientPID, EventNodeNotReady}},
		{"adopted node without conditions", st("", "", "", ""), st(F, F, F, T),
			[]string{EventSufficientMemory, EventNoDiskPressure, EventSufficientPID, EventNodeReady}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, conditionChanges(tc.before, tc.after)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAggregateMessage(t *testing.T) {
	for _, tc := range []struct {
		causes []string
		want   string
	}{
		{[]string{"container runtime is down"}, "container runtime is down"},
		{[]string{"a", "a"}, "a"},
		{[]string{"container runtime is down", "node is shutting down"}, "[container runtime is down, node is shutting down]"},
		{[]string{"a", "b", "a", "c"}, "[a, b, c]"},
	} {
		if got := aggregateMessage(tc.causes); got != tc.want {
			t.Errorf("aggregateMessage(%q) = %q, want %q", tc.causes, got, tc.want)
		}
	}
}
