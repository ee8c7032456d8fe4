package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// ProbeKind says which probe a pod option sets.
type ProbeKind int

// The probe kinds.
const (
	LivenessProbe ProbeKind = iota
	ReadinessProbe
	StartupProbe
)

// WithProbe sets a probe of kind on container.
func WithProbe(container string, kind ProbeKind, p *corev1.Probe) PodOption {
	return func(pod *corev1.Pod) {
		c := findOrAdd(pod, container)
		switch kind {
		case LivenessProbe:
			c.LivenessProbe = p
		case ReadinessProbe:
			c.ReadinessProbe = p
		default:
			c.StartupProbe = p
		}
	}
}

// HTTPProbe is an HTTP GET probe of port and path with period and
// thresholds (timeout 1 s).
func HTTPProbe(port int, path string, period, success, failure int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(int32(port)), Path: path}},
		PeriodSeconds: period, SuccessThreshold: success, FailureThreshold: failure, TimeoutSeconds: 1,
	}
}

// eventsOf returns the reason and message of the events on a pod, in order.
func eventsOf(h *harness.Harness, uid types.UID, reasons ...string) []string {
	var out []string
	for _, e := range h.API.User().Events() {
		if e.Object.UID != uid {
			continue
		}
		for _, r := range reasons {
			if e.Reason == r {
				out = append(out, fmt.Sprintf("%s %s x%d", e.Reason, e.Message, e.Count))
			}
		}
	}
	return out
}

// finishedAfter returns how long the pod's first instance of container
// ran, once it has finished.
func finishedAfter(t *testing.T, h *harness.Harness, uid types.UID, name string) (time.Duration, bool) {
	t.Helper()
	for _, c := range PodContainers(h, uid) {
		if c.Name != name || c.Attempt != 0 {
			continue
		}
		st, err := h.Runtime.ContainerStatus(context.Background(), c.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status.FinishedAt == 0 {
			return 0, false
		}
		return time.Duration(st.Status.FinishedAt - st.Status.StartedAt), true
	}
	return 0, false
}

func restartCount(h *harness.Harness, pod *corev1.Pod, name string) int32 {
	p, ok := APIPod(h, pod.Namespace, pod.Name)
	if !ok {
		return -1
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs.RestartCount
		}
	}
	return -1
}

// A container healthy for 60 s whose liveness probe (period 10 s,
// threshold 3) then fails is killed between 80 and 90 s after it started,
// with an Unhealthy event per failure and a Killing event, and restarted.
func TestProbeLivenessRestarts(t *testing.T) {
	h := start(t, 7)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("live", h.NodeName,
		Env("app", "FAKECRI_HTTP", "8080/healthz=200,60s:500"),
		WithProbe("app", LivenessProbe, HTTPProbe(8080, "/healthz", 10, 1, 3))))
	runUntil(t, h, "the first instance to be killed", 5*time.Minute, func() bool {
		_, done := finishedAfter(t, h, pod.UID, "app")
		return done
	})
	ran, _ := finishedAfter(t, h, pod.UID, "app")
	if ran < 80*time.Second || ran >= 90*time.Second+2*time.Second {
		t.Errorf("the failing container ran %v before its kill; want 80s ≤ t < 90s (+2s stop slack)", ran)
	}
	runUntil(t, h, "restartCount 1 and Ready", 2*time.Minute, func() bool {
		return restartCount(h, pod, "app") == 1 && PodIs(h, "default", "live", corev1.PodRunning, true)
	})
	want := []string{
		"Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 500 x3",
		"Killing Container app failed liveness probe, will be restarted x1",
	}
	if diff := cmp.Diff(want, eventsOf(h, pod.UID, "Unhealthy", "Killing")); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	c.Check()
	if v := c.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}
