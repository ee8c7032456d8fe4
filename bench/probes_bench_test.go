package bench

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/node/agent"
	"github.com/lockstep-dev/lockstep/node/metrics"
	"github.com/lockstep-dev/lockstep/scenarios"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// probedNode runs a simulated node of pods pods (one container each, with
// the three probes when probed: HTTP liveness, exec readiness, TCP
// startup, period 10 s, its port 8080 scripted to answer) for virtual, after they are all Ready, and
// returns the wall time and the process's CPU time of that run and the
// number of probe executions.
func probedNode(b *testing.B, pods int, probed bool, virtual time.Duration) (wall, cpu time.Duration, probes float64) {
	b.Helper()
	reg := prometheus.NewRegistry()
	h := harness.New(harness.Config{Seed: 1, Agent: agent.Config{Metrics: metrics.NewWithProbes(reg, reg)}})
	defer h.Close()
	h.StartAgent()
	for i := range pods {
		var opts []scenarios.PodOption
		if probed {
			opts = append(opts, scenarios.Env("app", "FAKECRI_HTTP", "8080=200"),
				scenarios.WithProbe("app", scenarios.LivenessProbe, scenarios.HTTPProbe(8080, "/healthz", 10, 1, 3)),
				scenarios.WithProbe("app", scenarios.ReadinessProbe, &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}, PeriodSeconds: 10}),
				scenarios.WithProbe("app", scenarios.StartupProbe, &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 10}))
		}
		if _, err := scenarios.Create(h, scenarios.NewPod(fmt.Sprintf("pod-%03d", i), h.NodeName, opts...)); err != nil {
			b.Fatal(err)
		}
	}
	err := h.K.RunUntil(func() bool {
		for i := range pods {
			if !scenarios.PodIs(h, "default", fmt.Sprintf("pod-%03d", i), corev1.PodRunning, true) {
				return false
			}
		}
		return true
	}, 5*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	before, cpu0 := probeCount(b, reg), cpuTime()
	start := time.Now()
	if err := h.K.RunFor(virtual); err != nil {
		b.Fatal(err)
	}
	return time.Since(start), cpuTime() - cpu0, probeCount(b, reg) - before
}

// cpuTime is the process's user and system CPU time so far: unlike wall
// time, it does not count the time other processes of a shared machine
// hold the cores.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func probeCount(b *testing.B, g prometheus.Gatherer) float64 {
	mfs, err := g.Gather()
	if err != nil {
		b.Fatal(err)
	}
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() == metrics.ProberProbeTotal {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// BenchmarkProbes runs a 50-pod node with three probes per container for
// one virtual hour, and the same node without probes: it reports the
// probed node's speed (virtual time over wall time, and over CPU time) and
// the agent's CPU per probe execution (the CPU-time difference of the two
// runs over the number of probe executions).
func BenchmarkProbes(b *testing.B) {
	const pods, virtual = 50, time.Hour
	var wall, with, without time.Duration
	var runs float64
	for range b.N {
		w, c, n := probedNode(b, pods, true, virtual)
		_, co, _ := probedNode(b, pods, false, virtual)
		wall, with, without, runs = wall+w, with+c, without+co, runs+n
	}
	b.ReportMetric(float64(virtual)*float64(b.N)/float64(wall), "x-real-time")
	b.ReportMetric(float64(virtual)*float64(b.N)/float64(with), "x-cpu-time")
	b.ReportMetric(runs/float64(b.N), "probes/run")
	b.ReportMetric(float64(with-without)/runs, "cpu-ns/probe")
}
