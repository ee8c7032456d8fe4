package prober

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestFoundOfReadsTheAPIStatus(t *testing.T) {
	yes, no := true, false
	pod := &corev1.Pod{Status: corev1.PodStatus{
		Conditions: []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionFalse}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		InitContainerStatuses: []corev1.ContainerStatus{
			{Name: "proxy", ContainerID: "containerd://p1", Started: &yes},
		},
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", ContainerID: "cri://a1", Started: &yes},
			{Name: "slow", ContainerID: "cri://s1", Started: &no},
			{Name: "new"},
		},
	}}
	want := found{ready: true, started: map[string]foundContainer{
		"proxy": {id: "p1", started: true},
		"app":   {id: "a1", started: true},
		"slow":  {id: "s1"},
		"new":   {},
	}}
	if diff := cmp.Diff(want, foundOf(pod), cmp.AllowUnexported(found{}, foundContainer{})); diff != "" {
		t.Errorf("foundOf (-want +got):\n%s", diff)
	}
	if got := foundOf(&corev1.Pod{}); got.ready || len(got.started) != 0 {
		t.Errorf("foundOf of a pod without status: %+v; want not ready, no containers", got)
	}
}
