package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstep-dev/lockstep/node/agent"
	"github.com/lockstep-dev/lockstep/node/metrics"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// gatherCounters reads every sample of the named families from g, keyed
// by the family name and the label values named in keys (in that order,
// "/"-joined); a histogram gives its sample count.
func gatherCounters(t *testing.T, g prometheus.Gatherer, keys []string, names ...string) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if !want[mf.GetName()] {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			key := mf.GetName()
			for _, k := range keys {
				if v, ok := labels[k]; ok {
					key += "/" + v
				}
			}
			v := m.GetCounter().GetValue()
			if h := m.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())
			}
			out[key] += v
		}
	}
	return out
}

// TestAgentLoopCounters: lockstep's loop counters count what they say
// over 55 s of the whole agent: an eviction cycle at once and then every
// 10 s (6), a CPU manager reconcile pass every 10 s (5), one
// registration (the Node is created at the first attempt), and the pod
// worker's steps of the one pod, per operation type, exactly those of
// kubelet_pod_worker_duration_seconds; once the pod is deleted and its
// worker forgotten, its step series are gone.
func TestAgentLoopCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := harness.Config{Seed: 31, Agent: agent.Config{Metrics: metrics.NewWithProbes(reg, reg)}}
	StaticCPUNode(&cfg)
	h := harness.New(cfg)
	t.Cleanup(h.Close)
	h.StartAgent()
	pod := mustCreate(t, h, NewPod("counted", h.NodeName))
	if err := h.K.RunFor(55 * time.Second); err != nil {
		t.Fatal(err)
	}
	got := gatherCounters(t, reg, nil, metrics.EvictionCycles, metrics.CPUManagerReconciles, metrics.NodeRegistrationAttempts)
	want := map[string]float64{
		metrics.EvictionCycles:           6,
		metrics.CPUManagerReconciles:     5,
		metrics.NodeRegistrationAttempts: 1,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("loop counters after 55 s (-want +got):\n%s", d)
	}

	steps := func() map[string]float64 {
		out := map[string]float64{}
		for k, v := range gatherCounters(t, reg, []string{"namespace", "pod", "pod_uid", "operation_type"}, metrics.PodWorkerSteps) {
			out[k] = v
		}
		return out
	}
	durations := func() map[string]float64 {
		return gatherCounters(t, reg, []string{"operation_type"}, metrics.PodWorkerDuration)
	}
	prefix := metrics.PodWorkerSteps + "/default/counted/" + string(pod.UID) + "/"
	perOp := func(steps map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range steps {
			if len(k) > len(prefix) && k[:len(prefix)] == prefix {
				out[metrics.PodWorkerDuration+"/"+k[len(prefix):]] = v
			} else {
				t.Errorf("a step series of another pod: %s %v", k, v)
			}
		}
		return out
	}
	running := steps()
	if d := cmp.Diff(durations(), perOp(running)); d != "" {
		t.Errorf("the pod's steps differ from the pod worker's step count (-durations +steps):\n%s", d)
	}
	if running[prefix+"create"] != 1 {
		t.Errorf("steps %v: want exactly one create step", running)
	}

	if err := h.API.User().DeletePodGracefully("default", pod.Name, nil); err != nil {
		t.Fatal(err)
	}
	if err := h.K.RunUntil(func() bool { return len(steps()) == 0 }, time.Minute); err != nil {
		t.Fatalf("the deleted pod's step series %v are still there: %v", steps(), err)
	}
	d := durations()
	if d[metrics.PodWorkerDuration+"/kill"] < 1 || d[metrics.PodWorkerDuration+"/terminated"] < 1 {
		t.Errorf("pod worker steps %v: want the kill and terminated steps counted before the series went", d)
	}
}
