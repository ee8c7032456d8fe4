//go:build e2e

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podRequests reads the apiserver's own count of requests on pods, by
// verb and subresource ("GET", "PATCH status", ...), from its /metrics.
func (e *env) podRequests(t *testing.T) map[string]float64 {
	t.Helper()
	raw, err := e.admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctxT(t, 30*time.Second))
	if err != nil {
		t.Fatalf("apiserver /metrics: %v", err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="pods"`) {
			continue
		}
		labels, value, ok := strings.Cut(line[len("apiserver_request_total{"):], "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		key := label(labels, "verb")
		if sub := label(labels, "subresource"); sub != "" {
			key += " " + sub
		}
		out[key] += v
	}
	return out
}

// lockstepRequests reads the node agent's own client-go request count by
// HTTP method (rest_client_requests_total, every code) from /metrics on its
// secure port (lockstep's, or the upstream kubelet's under hack/bench-real).
func (e *env) lockstepRequests(t *testing.T) map[string]float64 {
	t.Helper()
	code, body := e.nodeGet(t, "/metrics", e.adminTok)
	if code != 200 {
		t.Fatalf("%s /metrics: %d %.200s", agentName(), code, body)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "rest_client_requests_total{") {
			continue
		}
		labels, value, ok := strings.Cut(line[len("rest_client_requests_total{"):], "} ")
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); ok && err == nil {
			out[label(labels, "method")] += v
		}
	}
	return out
}

// perPod is (after - before) / n by key, rounded to two decimals, as a
// printable map.
func perPod(before, after map[string]float64, n int) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = float64(int(d/float64(n)*100+0.5)) / 100
		}
	}
	return out
}

// label returns the value of name in a Prometheus label list.
func label(labels, name string) string {
	_, rest, ok := strings.Cut(","+labels, ","+name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// waitPodsQuiet waits until lockstep has relisted three times with no
// pod worker step (of any pod) and no pod status write counted by the
// apiserver in between: the writes that follow the pods' starts have
// landed. batch names the test's pods (label batch), for the log.
func (e *env) waitPodsQuiet(t *testing.T, batch string, d time.Duration) {
	t.Helper()
	start := time.Now()
	writes := func() float64 {
		r := e.podRequests(t)
		return r["PATCH status"] + r["PUT status"]
	}
	poll(t, d, "no pod worker step nor pod status write over three relists", func() (bool, error) {
		steps0, err := e.agentMetric(metricPodSteps, nil)
		if err != nil {
			return false, err
		}
		relists, err := e.agentMetric(metricRelists, nil)
		if err != nil {
			return false, err
		}
		w0 := writes()
		e.waitMetricAtLeast(t, metricRelists, nil, relists+3, d)
		steps1, err := e.agentMetric(metricPodSteps, nil)
		w1 := writes()
		return err == nil && steps1 == steps0 && w1 == w0, fmt.Errorf("steps %g → %g, status writes %g → %g (%v)", steps0, steps1, w0, w1, err)
	})
	t.Logf("pods of batch %s quiet after %v", batch, time.Since(start).Round(time.Millisecond))
}

// TestIdleNodeSendsNoPodReadsOrWrites: a node running 20 pods with nothing
// happening sends no pod GET, PUT or PATCH over a minute (the status
// resync compares with the watched pods); it is counted by the
// apiserver, and the test itself sends no pod request in the window.
func TestIdleNodeSendsNoPodReadsOrWrites(t *testing.T) {
	e := setup(t)
	const n = 20
	ctx := ctxT(t, 5*time.Minute)
	label := "e2e-idle-" + fmt.Sprint(time.Now().UnixNano())
	for i := 0; i < n; i++ {
		p := e.pod(fmt.Sprintf("idle%02d", i), false, sleeper)
		p.Labels = map[string]string{"batch": label}
		e.create(t, p)
	}
	poll(t, 2*time.Minute, "20 pods Ready", func() (bool, error) {
		list, err := e.admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "batch=" + label})
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range list.Items {
			if podReady(&list.Items[i]) && list.Items[i].Status.Phase == corev1.PodRunning {
				ready++
			}
		}
		return ready == n, nil
	})
	// Let the last writes of the starts land: no pod worker step and no
	// pod status write while lockstep relists three times.
	e.waitPodsQuiet(t, label, 2*time.Minute)
	before := e.podRequests(t)
	time.Sleep(time.Minute)
	after := e.podRequests(t)
	delta := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			delta[k] = d
		}
	}
	t.Logf("FIGURE pod requests to the apiserver over an idle minute with %d pods (all clients): %v", n, delta)
	for _, verb := range []string{"GET", "PUT", "PUT status", "PATCH status", "GET status"} {
		if delta[verb] != 0 {
			t.Errorf("%v pod %s requests in an idle minute, want none", delta[verb], verb)
		}
	}
}

// TestClientMetricsAndProfiling: lockstep's /metrics carries client-go's
// request metrics under their upstream names (its status writes are
// PATCHes), and /debug/pprof answers behind authentication.
func TestClientMetricsAndProfiling(t *testing.T) {
	e := setup(t)
	p := e.create(t, e.pod("metrics", false, sleeper))
	e.waitPod(t, p, 90*time.Second, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	code, body := e.nodeGet(t, "/metrics", e.adminTok)
	if code != 200 {
		t.Fatalf("/metrics: %d %.300s", code, body)
	}
	for _, want := range []string{`rest_client_requests_total{code="200",host=`, `method="PATCH"`,
		"rest_client_request_duration_seconds_bucket{", "rest_client_rate_limiter_duration_seconds_bucket{"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if code, body := e.nodeGet(t, "/debug/pprof/", e.adminTok); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ with the admin token: %d %.200q", code, body)
	}
	if code, _ := e.nodeGet(t, "/debug/pprof/", ""); code != 401 {
		t.Errorf("/debug/pprof/ without a token: %d, want 401", code)
	}
}
