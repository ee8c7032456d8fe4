package scenarios

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/node/agent"
	"github.com/lockstep-dev/lockstep/node/metrics"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

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

// readyWrites records the times the agent wrote a change of a pod's Ready
// condition.
type readyWrites struct {
	last  corev1.ConditionStatus
	moves []readyMove
}

type readyMove struct {
	At     time.Time
	Status corev1.ConditionStatus
}

func watchReady(h *harness.Harness, name string) *readyWrites {
	w := &readyWrites{}
	h.API.OnWrite(func(r apiserver.Record) {
		if r.Kind != apiserver.KindPod || r.Pod == nil || r.Pod.Name != name {
			return
		}
		for _, c := range r.Pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != w.last {
				w.last = c.Status
				w.moves = append(w.moves, readyMove{r.At, c.Status})
			}
		}
	})
	return w
}

// startedAt is when the pod's first instance of container started.
func startedAt(t *testing.T, h *harness.Harness, uid types.UID, name string) time.Time {
	t.Helper()
	for _, c := range PodContainers(h, uid) {
		if c.Name == name && c.Attempt == 0 {
			st, err := h.Runtime.ContainerStatus(context.Background(), c.ID, false)
			if err != nil {
				t.Fatal(err)
			}
			return time.Unix(0, st.Status.StartedAt)
		}
	}
	t.Fatalf("no first instance of %s", name)
	return time.Time{}
}

// readyWindow is an expected move of the Ready condition within [from, to)
// seconds of the container's start.
type readyWindow struct {
	status   corev1.ConditionStatus
	from, to int
}

// checkMoves compares Ready moves, as offsets from start, with windows.
func checkMoves(t *testing.T, moves []readyMove, start time.Time, want []readyWindow) {
	t.Helper()
	var got []string
	for _, m := range moves {
		got = append(got, fmt.Sprintf("%s@%v", m.Status, m.At.Sub(start).Round(time.Millisecond)))
	}
	if len(moves) != len(want) {
		t.Fatalf("Ready moves %v; want %d moves", got, len(want))
	}
	for i, w := range want {
		off := moves[i].At.Sub(start)
		if moves[i].Status != w.status || off < time.Duration(w.from)*time.Second || off >= time.Duration(w.to)*time.Second {
			t.Errorf("move %d: %s; want %s within [%ds, %ds) (all: %v)", i, got[i], w.status, w.from, w.to, got)
		}
	}
}

// Readiness follows its thresholds: with period 5 s, successThreshold 2
// and failureThreshold 3, an endpoint failing until 30 s, healthy until
// 60 s, failing until 90 s and then healthy makes the pod Ready within
// [35, 40) s (+2 s to write), unready within [70, 75) s and Ready again
// within [95, 100) s; the container is never restarted.
func TestProbeReadinessFlapping(t *testing.T) {
	h := start(t, 11)
	c := NewChecker(h)
	moves := watchReady(h, "flappy")
	pod := mustCreate(t, h, NewPod("flappy", h.NodeName,
		Env("app", "FAKECRI_HTTP", "8080/ready=503,30s:200,60s:503,90s:200"),
		WithProbe("app", ReadinessProbe, HTTPProbe(8080, "/ready", 5, 2, 3))))
	if err := h.K.RunFor(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	c.Check()
	start := startedAt(t, h, pod.UID, "app")
	checkMoves(t, moves.moves, start, []readyWindow{
		{corev1.ConditionFalse, -5, 2}, {corev1.ConditionTrue, 35, 42}, {corev1.ConditionFalse, 70, 77}, {corev1.ConditionTrue, 95, 102}})
	if n := restartCount(h, pod, "app"); n != 0 {
		t.Errorf("restartCount %d; want 0", n)
	}
	if v := c.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}

// A slow starter (ready after 50 s) whose liveness probe fails until then
// is protected by its startup probe: never killed, started and Ready once
// the startup probe succeeds. Without the startup probe the same pod is
// killed.
func TestProbeStartupProtectsSlowStarter(t *testing.T) {
	for _, withStartup := range []bool{true, false} {
		t.Run(fmt.Sprintf("startup=%v", withStartup), func(t *testing.T) {
			h := start(t, 13)
			c := NewChecker(h)
			opts := []PodOption{
				Env("app", "FAKECRI_HTTP", "8080/healthz=500,50s:200"),
				Env("app", "FAKECRI_EXEC", "cat /tmp/started=1,50s:0"),
				WithProbe("app", LivenessProbe, HTTPProbe(8080, "/healthz", 5, 1, 1)),
			}
			if withStartup {
				opts = append(opts, WithProbe("app", StartupProbe, &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/started"}}},
					PeriodSeconds: 5, FailureThreshold: 20,
				}))
			}
			pod := mustCreate(t, h, NewPod("slow", h.NodeName, opts...))
			if err := h.K.RunFor(3 * time.Minute); err != nil {
				t.Fatal(err)
			}
			c.Check()
			if killed := restartCount(h, pod, "app") > 0; killed == withStartup {
				t.Errorf("restartCount %d; want it 0 exactly when a startup probe protects the container", restartCount(h, pod, "app"))
			}
			if withStartup {
				p, _ := APIPod(h, "default", "slow")
				if !IsReady(p) || p.Status.ContainerStatuses[0].Started == nil || !*p.Status.ContainerStatuses[0].Started {
					t.Errorf("slow starter not started and Ready: %+v", summarize(p))
				}
			}
			if v := c.Violations(); len(v) > 0 {
				t.Errorf("violations: %v", v)
			}
		})
	}
}

// Each handler on its own: a readiness probe whose endpoint turns healthy
// at 20 s makes the pod Ready only then, with the failures reported in
// Unhealthy events; an exec that hangs times out; an HTTP redirect to
// another host is a success with a ProbeWarning.
func TestProbeHandlers(t *testing.T) {
	svc := "db"
	for _, tc := range []struct {
		name      string
		env       [2]string
		handler   corev1.ProbeHandler
		timeout   int32
		readyFrom int
		event     string
	}{{
		name: "exec", env: [2]string{"FAKECRI_EXEC", "check=1,20s:0"},
		handler:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}},
		readyFrom: 20, event: "Unhealthy Readiness probe failed: ",
	}, {
		name: "exec timeout", env: [2]string{"FAKECRI_EXEC", "check=hang,20s:0"}, timeout: 2,
		handler:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}},
		readyFrom: 20, event: `Unhealthy Readiness probe failed: command timed out: "check" timed out after 2s`,
	}, {
		name: "HTTP", env: [2]string{"FAKECRI_HTTP", "8080/healthz=503,20s:200"},
		handler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080), Path: "/healthz"}},
		readyFrom: 20, event: "Unhealthy Readiness probe failed: HTTP probe failed with statuscode: 503",
	}, {
		name: "HTTP redirect to another host", env: [2]string{"FAKECRI_HTTP", "8080/healthz=302>http://elsewhere.example/"},
		handler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080), Path: "/healthz"}},
		readyFrom: 0, event: "ProbeWarning Readiness probe warning: Probe terminated redirects, Response body: 302\n",
	}, {
		name: "TCP", env: [2]string{"FAKECRI_TCP", "5432=down,20s:up"},
		handler:   corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(5432)}},
		readyFrom: 20, event: "Unhealthy Readiness probe failed: ",
	}, {
		name: "gRPC", env: [2]string{"FAKECRI_GRPC", "9090/db=not_serving,20s:serving"},
		handler:   corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: &svc}},
		readyFrom: 20, event: `Unhealthy Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, 17)
			moves := watchReady(h, "probed")
			pod := mustCreate(t, h, NewPod("probed", h.NodeName, Env("app", tc.env[0], tc.env[1]),
				WithProbe("app", ReadinessProbe, &corev1.Probe{ProbeHandler: tc.handler, PeriodSeconds: 5, TimeoutSeconds: tc.timeout})))
			if err := h.K.RunFor(time.Minute); err != nil {
				t.Fatal(err)
			}
			start := startedAt(t, h, pod.UID, "app")
			checkMoves(t, moves.moves, start, []readyWindow{
				{corev1.ConditionFalse, -5, 2}, {corev1.ConditionTrue, tc.readyFrom, tc.readyFrom + 5 + int(tc.timeout) + 2}})
			found := false
			for _, e := range eventsOf(h, pod.UID, "Unhealthy", "ProbeWarning") {
				found = found || strings.HasPrefix(e, tc.event)
			}
			if !found {
				t.Errorf("no event starting %q; events: %q", tc.event, eventsOf(h, pod.UID, "Unhealthy", "ProbeWarning"))
			}
		})
	}
}

// Probe workers come and go with their pods: after 1,000 pods with three
// probes each were created and deleted, none is left.
func TestProbeWorkersDoNotLeak(t *testing.T) {
	t.Parallel()
	h := start(t, 19)
	const batch, rounds = 10, 100
	probe := func() *corev1.Probe { return HTTPProbe(8080, "/", 1, 1, 3) }
	peak := 0
	for r := 0; r < rounds; r++ {
		for i := 0; i < batch; i++ {
			mustCreate(t, h, NewPod(fmt.Sprintf("p%d-%d", r, i), h.NodeName, Grace(1), Env("app", "FAKECRI_HTTP", "8080=200"),
				WithProbe("app", LivenessProbe, probe()), WithProbe("app", ReadinessProbe, probe()), WithProbe("app", StartupProbe, probe())))
		}
		runUntil(t, h, "the batch Ready", time.Minute, func() bool {
			for i := 0; i < batch; i++ {
				if !PodIs(h, "default", fmt.Sprintf("p%d-%d", r, i), corev1.PodRunning, true) {
					return false
				}
			}
			return true
		})
		peak = max(peak, h.Agent().ProbeWorkers())
		for i := 0; i < batch; i++ {
			if err := h.API.User().DeletePodGracefully("default", fmt.Sprintf("p%d-%d", r, i), nil); err != nil {
				t.Fatal(err)
			}
		}
		runUntil(t, h, "the batch gone", time.Minute, func() bool {
			for i := 0; i < batch; i++ {
				if _, ok := APIPod(h, "default", fmt.Sprintf("p%d-%d", r, i)); ok {
					return false
				}
			}
			return true
		})
	}
	if peak != 3*batch {
		t.Errorf("peak probe workers %d; want %d", peak, 3*batch)
	}
	runUntil(t, h, "no probe worker left", time.Minute, func() bool { return h.Agent().ProbeWorkers() == 0 })
}

// A container that fails its startup probe at once is killed and then
// restarted under the crash-loop back-off (10 s, 20 s, 40 s, …) like any
// failed container, not again and again in the same sync: after 3 minutes
// it has restarted a handful of times and waits in CrashLoopBackOff.
func TestProbeFailureBacksOff(t *testing.T) {
	h := start(t, 0)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("p1", h.NodeName, Grace(2), Env("app", "FAKECRI_GRPC", "8002=not_serving"),
		WithProbe("app", StartupProbe, &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 8002}},
			PeriodSeconds: 1, TimeoutSeconds: 2, FailureThreshold: 1, InitialDelaySeconds: 2})))
	backedOff := false
	for range 36 {
		if err := RunChecked(h, c, 5*time.Second, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		p, _ := APIPod(h, "default", "p1")
		if cs := p.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CrashLoopBackOff" {
			backedOff = true
		}
	}
	if n := restartCount(h, pod, "app"); n < 2 || n > 6 {
		t.Errorf("restartCount %d after 3 minutes; want 2 to 6 (back-off 10 s, 20 s, 40 s, 80 s)", n)
	}
	if !backedOff {
		t.Errorf("never waiting in CrashLoopBackOff")
	}
	if v := c.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}

// Probe runs are counted under the kubelet's names on the probe registry
// (served on /metrics/probes): prober_probe_total by type and result, and
// prober_probe_duration_seconds for runs that got an answer.
func TestProbeMetrics(t *testing.T) {
	main, probes := prometheus.NewRegistry(), prometheus.NewRegistry()
	h := harness.New(harness.Config{Seed: 23, Agent: agent.Config{Metrics: metrics.NewWithProbes(main, probes)}})
	t.Cleanup(h.Close)
	h.StartAgent()
	pod := mustCreate(t, h, NewPod("counted", h.NodeName, Env("app", "FAKECRI_EXEC", "check=1,20s:0"),
		WithProbe("app", ReadinessProbe, &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}}, PeriodSeconds: 5})))
	if err := h.K.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	mfs, err := probes.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["pod_uid"] != "" && labels["pod_uid"] != string(pod.UID) || labels["pod"] != "counted" || labels["container"] != "app" {
				t.Errorf("%s: unexpected labels %v", mf.GetName(), labels)
			}
			switch mf.GetName() {
			case metrics.ProberProbeTotal:
				got[labels["probe_type"]+"/"+labels["result"]] = m.GetCounter().GetValue()
			case metrics.ProberProbeDurationSeconds:
				got["duration/"+labels["probe_type"]] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	// Probes every 5 s for a minute: about 4 failures before 20 s, the
	// rest successes; every run has a duration.
	if f, s := got["Readiness/failed"], got["Readiness/successful"]; f < 3 || f > 5 || s < 7 || s > 10 || got["duration/Readiness"] != f+s {
		t.Errorf("probe metrics %v; want 3-5 failed, 7-10 successful Readiness runs, each with a duration", got)
	}
	if n, err := testutil.GatherAndCount(main, metrics.ProberProbeTotal); err != nil || n != 0 {
		t.Errorf("%s on the main registry: %d series (%v); want none", metrics.ProberProbeTotal, n, err)
	}
}

// Probed runs are deterministic: the same seed gives the same trace,
// whatever GOMAXPROCS is, with probes of every handler failing and
// recovering and an agent crash (the restarted agent draws its workers'
// first offsets again); another seed gives another trace.
func TestProbeRunsAreDeterministic(t *testing.T) {
	run := func(seed uint64) string {
		h := harness.New(harness.Config{Seed: seed})
		defer h.Close()
		h.StartAgent()
		svc := "db"
		mustCreate(t, h, NewPod("mixed", h.NodeName,
			Env("app", "FAKECRI_HTTP", "8080/healthz=200,30s:500"),
			Env("app", "FAKECRI_EXEC", "check=1,10s:0,50s:hang"),
			Env("app", "FAKECRI_GRPC", "9090/db=not_serving,5s:serving"),
			WithProbe("app", LivenessProbe, HTTPProbe(8080, "/healthz", 3, 1, 2)),
			WithProbe("app", ReadinessProbe, &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}}, PeriodSeconds: 2}),
			WithProbe("app", StartupProbe, &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: &svc}}, PeriodSeconds: 1, FailureThreshold: 10})))
		if err := h.K.RunFor(45 * time.Second); err != nil {
			t.Fatal(err)
		}
		h.CrashAgent()
		h.StartAgent()
		if err := h.K.RunFor(90 * time.Second); err != nil {
			t.Fatal(err)
		}
		return h.K.Trace().Hash()
	}
	first := run(5)
	for _, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		got := run(5)
		runtime.GOMAXPROCS(prev)
		if got != first {
			t.Errorf("GOMAXPROCS=%d: trace hash %s; first run %s", procs, got, first)
		}
	}
	if other := run(6); other == first {
		t.Errorf("seeds 5 and 6 gave the same trace %s", first)
	}
}
