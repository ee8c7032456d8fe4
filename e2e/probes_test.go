//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// podCondition returns the status of a pod condition ("" if absent).
func podCondition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// events returns "Reason: message" of the events about a pod.
func (e *env) events(t *testing.T, p *corev1.Pod) []string {
	t.Helper()
	list, err := e.admin.CoreV1().Events(p.Namespace).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(p.UID)})
	if err != nil {
		t.Fatalf("list events of %s: %v", p.Name, err)
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, ev.Reason+": "+ev.Message)
	}
	return out
}

// TestProbeHTTPLivenessRestartsContainer: busybox httpd serves a page the
// container removes after 10 s; the HTTP liveness probe (on the pod IP,
// over the CNI bridge) then fails twice and the container is killed
// (Unhealthy, then Killing "failed liveness probe") and restarted.
func TestProbeHTTPLivenessRestartsContainer(t *testing.T) {
	e := setup(t)
	p := e.pod("liveness", false, `mkdir -p /www && echo ok > /www/healthz && httpd -p 8080 -h /www && sleep 10 && rm /www/healthz && while :; do sleep 1; done`)
	p.Spec.Containers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080), Path: "/healthz"}},
		PeriodSeconds: 2, FailureThreshold: 2,
	}
	p = e.create(t, p)
	e.waitPod(t, p, 60*time.Second, "Ready", podReady)
	start := time.Now()
	got := e.waitPod(t, p, 60*time.Second, "restarted after its liveness probe failed", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount >= 1
	})
	t.Logf("restarted %v after Ready; last termination %+v", time.Since(start).Round(time.Second), got.Status.ContainerStatuses[0].LastTerminationState.Terminated)
	evs := strings.Join(e.events(t, p), "\n")
	for _, want := range []string{"Unhealthy: Liveness probe failed: HTTP probe failed with statuscode: 404", "Killing: Container c failed liveness probe, will be restarted"} {
		if !strings.Contains(evs, want) {
			t.Errorf("no event %q; events:\n%s", want, evs)
		}
	}
}

// TestProbeExecReadinessFlipsReady: an exec readiness probe (cat
// /tmp/ready) follows the file the container creates, removes and
// creates again: the pod's Ready condition goes True, False, True.
func TestProbeExecReadinessFlipsReady(t *testing.T) {
	e := setup(t)
	p := e.pod("readiness", true, `touch /tmp/ready; sleep 15; rm /tmp/ready; sleep 15; touch /tmp/ready; while :; do sleep 1; done`)
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	p = e.create(t, p)
	for i, want := range []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionTrue} {
		got := e.waitPod(t, p, 30*time.Second, "Ready="+string(want), func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.PodReady) == want && podCondition(p, corev1.ContainersReady) == want
		})
		t.Logf("step %d: Ready=%s at %v", i, want, time.Now().Format(time.TimeOnly))
		if n := got.Status.ContainerStatuses[0].RestartCount; n != 0 {
			t.Fatalf("readiness restarted the container (restartCount %d)", n)
		}
	}
}

// TestProbeTCPStartupOnLatePort: the container opens its port after 8 s;
// a TCP startup probe holds the liveness probe (which would fail until
// then) and the pod's readiness: the container is never restarted,
// started and Ready once the port is open.
func TestProbeTCPStartupOnLatePort(t *testing.T) {
	e := setup(t)
	p := e.pod("startup", false, `sleep 8; mkdir -p /www; echo ok > /www/index.html; httpd -f -p 8080 -h /www`)
	c := &p.Spec.Containers[0]
	c.StartupProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1, FailureThreshold: 30,
	}
	c.LivenessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	p = e.create(t, p)
	early := e.waitPod(t, p, 30*time.Second, "running, not started yet", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Running != nil && cs[0].Started != nil && !*cs[0].Started
	})
	if podReady(early) {
		t.Errorf("pod Ready before its startup probe succeeded")
	}
	e.waitPod(t, p, 40*time.Second, "started and Ready", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return podReady(p) && len(cs) == 1 && cs[0].Started != nil && *cs[0].Started
	})
	// The liveness probe runs every second from now on: it must keep
	// passing for a few periods.
	deadline := time.Now().Add(3 * time.Second)
	poll(t, 10*time.Second, "three liveness periods without a restart", func() (bool, error) {
		got := e.get(t, p)
		if n := got.Status.ContainerStatuses[0].RestartCount; n != 0 {
			t.Fatalf("restartCount %d; the startup probe should have protected the container", n)
		}
		return time.Now().After(deadline), nil
	})
}

// TestProbeLivenessOnFailureExitZeroRestarts: a container that traps
// SIGTERM and exits 0, under restartPolicy OnFailure, fails its exec
// liveness probe: the kubelet kills it ("will be restarted") and starts
// it again in the same sync whatever its exit code (computePodActions
// puts a probe-killed container in ContainersToStart unless the policy is
// Never), so restartCount reaches 1 and the pod never turns Succeeded.
func TestProbeLivenessOnFailureExitZeroRestarts(t *testing.T) {
	e := setup(t)
	p := e.pod("liveness-onfailure", false, `trap 'exit 0' TERM; sleep 600 & wait $!`)
	p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	p.Spec.Containers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "exit 1"}}},
		InitialDelaySeconds: 5, PeriodSeconds: 2, FailureThreshold: 1,
	}
	p = e.create(t, p)
	got := e.waitPod(t, p, 90*time.Second, "restarted after its liveness probe failed", func(p *corev1.Pod) bool {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			t.Fatalf("pod turned %s instead of restarting its container: %+v", p.Status.Phase, p.Status.ContainerStatuses)
		}
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount >= 1
	})
	last := got.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if last == nil || last.ExitCode != 0 {
		t.Errorf("last termination %+v; want the killed instance's exit 0", last)
	}
	evs := strings.Join(e.events(t, p), "\n")
	if want := "Killing: Container c failed liveness probe, will be restarted"; !strings.Contains(evs, want) {
		t.Errorf("no event %q; events:\n%s", want, evs)
	}
}
