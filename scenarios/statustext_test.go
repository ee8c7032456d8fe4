package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// conditionReasons maps each condition of p to "Status/Reason".
func conditionReasons(p *corev1.Pod) map[corev1.PodConditionType]string {
	out := map[corev1.PodConditionType]string{}
	for _, c := range p.Status.Conditions {
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

// TestFailedPodStatusText: a pod whose init container fails under
// restartPolicy Never is Failed; its Ready and ContainersReady say
// PodFailed (not PodCompleted), and its regular container, which never
// started, stays waiting instead of getting a made-up
// ContainerStatusUnknown termination, as upstream reports it.
func TestFailedPodStatusText(t *testing.T) {
	h := start(t, 91)
	mustCreate(t, h, NewPod("initfail", h.NodeName, Restart(corev1.RestartPolicyNever), Init("setup", time.Second, 1)))
	runUntil(t, h, "initfail Failed", time.Minute, func() bool { return PodIs(h, "default", "initfail", corev1.PodFailed, false) })
	if err := h.K.RunFor(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	got, _ := APIPod(h, "default", "initfail")
	want := summary{Phase: corev1.PodFailed,
		Conditions: map[corev1.PodConditionType]corev1.ConditionStatus{
			corev1.PodScheduled: corev1.ConditionTrue, corev1.PodReadyToStartContainers: corev1.ConditionFalse,
			corev1.PodInitialized: corev1.ConditionFalse, corev1.ContainersReady: corev1.ConditionFalse, corev1.PodReady: corev1.ConditionFalse,
		},
		Containers: map[string]string{"setup": "terminated:Error:1", "app": "waiting:PodInitializing"},
		Restarts:   map[string]int32{"setup": 0, "app": 0}}
	if diff := cmp.Diff(want, summarize(got)); diff != "" {
		t.Errorf("status of the failed pod (-want +got):\n%s", diff)
	}
	reasons := conditionReasons(got)
	for _, ct := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		if reasons[ct] != "False/PodFailed" {
			t.Errorf("%s = %s, want False/PodFailed", ct, reasons[ct])
		}
	}

	mustCreate(t, h, NewPod("done", h.NodeName, Restart(corev1.RestartPolicyNever), Exits("app", time.Second, 0)))
	runUntil(t, h, "done Succeeded", time.Minute, func() bool { return PodIs(h, "default", "done", corev1.PodSucceeded, false) })
	got, _ = APIPod(h, "default", "done")
	reasons = conditionReasons(got)
	for _, ct := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		if reasons[ct] != "False/PodCompleted" {
			t.Errorf("succeeded pod: %s = %s, want False/PodCompleted", ct, reasons[ct])
		}
	}
}
