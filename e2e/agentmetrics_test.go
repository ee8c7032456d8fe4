//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

// The agent's counters the tests wait on instead of sleeping: each counts
// a pass of one of lockstep's loops (docs/architecture.md, node/metrics).
const (
	metricRelists       = "kubelet_pleg_relist_duration_seconds_count"
	metricPodSteps      = "lockstep_pod_worker_steps_total"
	metricEvictCycles   = "lockstep_eviction_manager_cycles_total"
	metricCPUReconciles = "lockstep_cpu_manager_reconciles_total"
	metricRegistrations = "lockstep_node_registration_attempts_total"
)

// agentMetric reads lockstep's /metrics on its secure port (as the
// admin) and sums the samples of name whose labels include labels: a
// counter's or gauge's value; for name ending in _count, the sample count
// of that histogram. A family that is not exposed sums to 0. Unlike
// nodeGet it returns an error rather than failing the test, so that it
// can be polled while a restarted lockstep is coming up.
func (e *env) agentMetric(name string, labels map[string]string) (float64, error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: insecureTLS()}}
	req, err := http.NewRequest("GET", e.nodeURL("/metrics"), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+e.adminTok)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("lockstep /metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("lockstep /metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("lockstep /metrics: %d %.200s", resp.StatusCode, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return 0, fmt.Errorf("lockstep /metrics: parse: %w", err)
	}
	family, count := name, false
	if f, ok := families[name]; !ok || f == nil {
		if base, cut := strings.CutSuffix(name, "_count"); cut {
			family, count = base, true
		}
	}
	sum := 0.0
	for _, m := range families[family].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && have[k] == v
		}
		if !match {
			continue
		}
		if count {
			sum += float64(m.GetHistogram().GetSampleCount())
		} else {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return sum, nil
}

// waitMetricAtLeast polls lockstep's /metrics until name (see
// agentMetric) reaches n, for at most d, and returns its value.
func (e *env) waitMetricAtLeast(t *testing.T, name string, labels map[string]string, n float64, d time.Duration) float64 {
	t.Helper()
	var v float64
	poll(t, d, fmt.Sprintf("%s%s at least %g", name, labelString(labels), n), func() (bool, error) {
		var err error
		v, err = e.agentMetric(name, labels)
		return err == nil && v >= n, fmt.Errorf("%s%s = %g: %v", name, labelString(labels), v, err)
	})
	return v
}

// waitMoreCycles reads name now (waiting for /metrics to answer) and
// waits until it has grown by k: k more passes of the loop it counts.
func (e *env) waitMoreCycles(t *testing.T, name string, labels map[string]string, k float64, d time.Duration) {
	t.Helper()
	start := time.Now()
	now := e.waitMetricAtLeast(t, name, labels, 0, d)
	got := e.waitMetricAtLeast(t, name, labels, now+k, d)
	t.Logf("%s%s went from %g to %g in %v", name, labelString(labels), now, got, time.Since(start).Round(time.Millisecond))
}

// waitPodsSettled waits until this lockstep process has run at least one
// pod worker step for each of pods and then relisted the runtime twice
// with no further step of any of them: the step that would have
// restarted, resized or killed something has run, and its effect (or the
// lack of one) has been seen by the PLEG, which would have synced the pod
// again. (The PLEG relists every second on containerd 1.6, which has no
// container events.)
func (e *env) waitPodsSettled(t *testing.T, d time.Duration, pods ...*corev1.Pod) {
	t.Helper()
	start := time.Now()
	for _, p := range pods {
		e.waitMetricAtLeast(t, metricPodSteps, map[string]string{"pod_uid": string(p.UID)}, 1, d)
	}
	steps := func() ([]float64, error) {
		var out []float64
		for _, p := range pods {
			v, err := e.agentMetric(metricPodSteps, map[string]string{"pod_uid": string(p.UID)})
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	var after []float64
	poll(t, d, "no worker step of the pods over two PLEG relists", func() (bool, error) {
		before, err := steps()
		if err != nil {
			return false, err
		}
		relists, err := e.agentMetric(metricRelists, nil)
		if err != nil {
			return false, err
		}
		e.waitMetricAtLeast(t, metricRelists, nil, relists+2, d)
		after, err = steps()
		return err == nil && slices.Equal(before, after), fmt.Errorf("steps went from %v to %v (%v)", before, after, err)
	})
	t.Logf("%d pods settled (worker steps %v) in %v", len(pods), after, time.Since(start).Round(time.Millisecond))
}

// labelString prints labels as a Prometheus selector ("" for none).
func labelString(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	var out []string
	for k, v := range labels {
		out = append(out, fmt.Sprintf("%s=%q", k, v))
	}
	slices.Sort(out)
	return "{" + strings.Join(out, ",") + "}"
}
