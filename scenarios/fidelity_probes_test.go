package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// execProbe is an exec probe running command with period and failure
// threshold (timeout 1 s, success threshold 1).
func execProbe(command string, period, failure int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{command}}},
		PeriodSeconds: period, FailureThreshold: failure, TimeoutSeconds: 1,
	}
}

// containerWrite is one written status of a pod's container.
type containerWrite struct {
	At      time.Time
	Ready   bool
	Started string // "true", "false" or "unset"
	PodRdy  corev1.ConditionStatus
}

// watchContainer records every written status of container (regular or
// init) in pod name.
func watchContainer(h *harness.Harness, name, container string) *[]containerWrite {
	var out []containerWrite
	h.API.OnWrite(func(r apiserver.Record) {
		if r.Kind != apiserver.KindPod || r.Pod == nil || r.Pod.Name != name {
			return
		}
		w := containerWrite{At: r.At, Started: "unset"}
		for _, c := range r.Pod.Status.Conditions {
			if c.Type == corev1.PodReady {
				w.PodRdy = c.Status
			}
		}
		for _, cs := range append(r.Pod.Status.InitContainerStatuses, r.Pod.Status.ContainerStatuses...) {
			if cs.Name == container {
				w.Ready = cs.Ready
				if cs.Started != nil {
					w.Started = fmt.Sprint(*cs.Started)
				}
			}
		}
		out = append(out, w)
	})
	return &out
}

// restartAgentAt runs until at, crashes the agent, leaves it down for
// down and starts it again.
func restartAgentAt(t *testing.T, h *harness.Harness, at, down time.Duration) {
	t.Helper()
	if err := h.K.RunFor(at); err != nil {
		t.Fatal(err)
	}
	h.CrashAgent()
	if err := h.K.RunFor(down); err != nil {
		t.Fatal(err)
	}
	h.StartAgent()
}

// An agent restart keeps a Ready, started container Ready and started
// until a probe says otherwise, as the kubelet's prober does for a
// container that ran before the kubelet started (worker.go's restart
// case, setReadyStateOnKubeletRestart): with the probes succeeding, no
// status after the restart shows it unready or unstarted. A readiness
// probe that then fails still makes it unready after failureThreshold
// periods (the restart is no free pass).
func TestFidelityAgentRestartKeepsProbedPodReady(t *testing.T) {
	for _, tc := range []struct {
		name    string
		check   string // the readiness command's script
		startup bool
		failsAt time.Duration // 0: never
	}{
		{name: "readiness", check: "check=0"},
		{name: "startup+readiness", check: "check=0", startup: true},
		{name: "readiness fails after the restart", check: "check=0,60s:1", failsAt: 60 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, 41)
			c := NewChecker(h)
			writes := watchContainer(h, "ready", "app")
			opts := []PodOption{
				Env("app", "FAKECRI_EXEC", tc.check+";boot=0"),
				WithProbe("app", ReadinessProbe, execProbe("check", 5, 3)),
			}
			if tc.startup {
				opts = append(opts, WithProbe("app", StartupProbe, execProbe("boot", 5, 10)))
			}
			pod := mustCreate(t, h, NewPod("ready", h.NodeName, opts...))
			restartAgentAt(t, h, 40*time.Second, 3*time.Second)
			restartedAt := h.K.Now()
			if err := h.K.RunFor(80 * time.Second); err != nil {
				t.Fatal(err)
			}
			c.Check()
			reportViolations(t, c)
			began := startedAt(t, h, pod.UID, "app")

			var wasReady bool
			var unreadyAt time.Time
			for _, w := range *writes {
				if w.At.Before(restartedAt) {
					wasReady = w.Ready && w.PodRdy == corev1.ConditionTrue
					continue
				}
				if w.Started != "true" {
					t.Errorf("status written at %v after the restart: started %s; want true", w.At.Sub(began), w.Started)
				}
				if (!w.Ready || w.PodRdy != corev1.ConditionTrue) && unreadyAt.IsZero() {
					unreadyAt = w.At
				}
			}
			if !wasReady {
				t.Fatalf("the container was not Ready before the restart (writes %+v)", *writes)
			}
			switch {
			case tc.failsAt == 0 && !unreadyAt.IsZero():
				t.Errorf("Ready went False at %v after the container started (the agent restarted at %v) with its probes succeeding",
					unreadyAt.Sub(began), restartedAt.Sub(began))
			case tc.failsAt != 0:
				// Three failures, 5 s apart, from the first probe at or after failsAt, then the write.
				lo, hi := tc.failsAt+10*time.Second, tc.failsAt+17*time.Second
				if unreadyAt.IsZero() || unreadyAt.Sub(began) < lo || unreadyAt.Sub(began) >= hi {
					t.Errorf("Ready went False at %v after the container started; want within [%v, %v) (three failures of the probe failing from %v)",
						unreadyAt.Sub(began), lo, hi, tc.failsAt)
				}
			}
			if n := restartCount(h, pod, "app"); n != 0 {
				t.Errorf("restartCount %d; want 0", n)
			}
		})
	}
}

// A sidecar whose startup probe had passed stays started across an agent
// restart (upstream seeds its startup result from the status, worker.go's
// restart case), and the app container behind it stays Ready: no
// container is restarted.
func TestFidelityAgentRestartKeepsSidecarStarted(t *testing.T) {
	h := start(t, 43)
	c := NewChecker(h)
	proxy := watchContainer(h, "side", "proxy")
	app := watchContainer(h, "side", "app")
	pod := mustCreate(t, h, NewPod("side", h.NodeName,
		Sidecar("proxy"),
		Env("proxy", "FAKECRI_EXEC", "boot=0"),
		WithProbe("proxy", StartupProbe, execProbe("boot", 5, 10)),
		Env("app", "FAKECRI_EXEC", "check=0"),
		WithProbe("app", ReadinessProbe, execProbe("check", 5, 3))))
	restartAgentAt(t, h, 40*time.Second, 3*time.Second)
	restartedAt := h.K.Now()
	if err := h.K.RunFor(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.Check()
	reportViolations(t, c)
	for name, writes := range map[string][]containerWrite{"proxy": *proxy, "app": *app} {
		before := 0
		for _, w := range writes {
			if w.At.Before(restartedAt) {
				before++
				continue
			}
			if w.Started != "true" || (name == "app" && !w.Ready) {
				t.Errorf("%s at %v after the restart: started %s ready %v; want started (and the app ready)", name, w.At.Sub(restartedAt), w.Started, w.Ready)
			}
		}
		// No write after the restart is the status staying as it was.
		if before == 0 {
			t.Errorf("%s: no status write before the restart", name)
		}
	}
	p, _ := APIPod(h, "default", "side")
	for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		if cs.Started == nil || !*cs.Started || !cs.Ready {
			t.Errorf("%s at the end: started %v ready %v; want both", cs.Name, cs.Started, cs.Ready)
		}
	}
	for _, name := range []string{"proxy", "app"} {
		for _, cs := range PodContainers(h, pod.UID) {
			if cs.Name == name && cs.Attempt != 0 {
				t.Errorf("%s was restarted (attempt %d)", name, cs.Attempt)
			}
		}
	}
}

// Network probe failures read as pkg/probe words them: a gRPC port nothing
// serves fails after the probe's timeout (the kubelet's dial blocks) with
// "timeout: failed to connect service …", an unhealthy service names its
// status; an HTTP endpoint that hangs fails with net/http's client
// timeout error.
func TestFidelityNetworkProbeTexts(t *testing.T) {
	h := start(t, 45)
	grpcReadiness := func(port int32) PodOption {
		return WithProbe("app", ReadinessProbe, &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: port}},
			PeriodSeconds: 5, TimeoutSeconds: 2,
		})
	}
	closed := mustCreate(t, h, NewPod("closed", h.NodeName, grpcReadiness(9090)))
	sick := mustCreate(t, h, NewPod("sick", h.NodeName, Env("app", "FAKECRI_GRPC", "9090=not_serving"), grpcReadiness(9090)))
	hung := mustCreate(t, h, NewPod("hung", h.NodeName, Env("app", "FAKECRI_HTTP", "8080/ready=hang"),
		WithProbe("app", ReadinessProbe, HTTPProbe(8080, "/ready", 5, 1, 3))))
	if err := h.K.RunFor(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		uid            types.UID
		prefix, suffix string
	}{
		{closed.UID, `Unhealthy Readiness probe failed: timeout: failed to connect service "`, `:9090" within 2s: context deadline exceeded`},
		{sick.UID, `Unhealthy Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`, ""},
		{hung.UID, `Unhealthy Readiness probe failed: Get "http://`, `:8080/ready": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`},
	} {
		ev := eventsOf(h, tc.uid, "Unhealthy")
		if len(ev) == 0 {
			t.Errorf("no Unhealthy event; want %q…%q", tc.prefix, tc.suffix)
			continue
		}
		msg := ev[0][:strings.LastIndex(ev[0], " x")]
		if !strings.HasPrefix(msg, tc.prefix) || !strings.HasSuffix(msg, tc.suffix) {
			t.Errorf("Unhealthy %q; want %q…%q", msg, tc.prefix, tc.suffix)
		}
	}
}

// A container is ready as soon as its startup probe has passed and its
// readiness probe passes, not a readiness period later: the status
// generated for a started instance that is not ready makes its readiness
// worker probe at once, as the kubelet's UpdatePodStatus triggers it (the
// node suite's "should be ready immediately after startupProbe succeeds":
// startup passing after 32 s, readiness every 30 s, Ready within 25 s of
// Started there; here within 2 s).
func TestFidelityReadyAsSoonAsStarted(t *testing.T) {
	h := start(t, 43)
	c := NewChecker(h)
	writes := watchContainer(h, "startup", "app")
	readiness := execProbe("check", 30, 3)
	startup := execProbe("boot", 5, 120)
	mustCreate(t, h, NewPod("startup", h.NodeName,
		Env("app", "FAKECRI_EXEC", "check=0;boot=1,32s:0"),
		WithProbe("app", ReadinessProbe, readiness), WithProbe("app", StartupProbe, startup)))
	if err := h.K.RunFor(90 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.Check()
	reportViolations(t, c)
	var startedAt, readyAt time.Time
	for _, w := range *writes {
		if w.Started == "true" && startedAt.IsZero() {
			startedAt = w.At
		}
		if w.Ready && w.PodRdy == corev1.ConditionTrue && readyAt.IsZero() {
			readyAt = w.At
		}
	}
	if startedAt.IsZero() || readyAt.IsZero() {
		t.Fatalf("started at %v, ready at %v: want both (writes %+v)", startedAt, readyAt, *writes)
	}
	if d := readyAt.Sub(startedAt); d < 0 || d > 2*time.Second {
		t.Errorf("Ready %v after Started; want within 2 s (the readiness probe run at once, not at its next 30 s tick)", d)
	}
}
