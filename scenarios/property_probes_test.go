package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// probeHandlers are the handler kinds a generated probe draws from.
var probeHandlers = []string{"exec", "http", "tcp", "grpc"}

// drawTimeline draws an endpoint's answers over time: healthy, unhealthy
// (or hanging) and flapping phases of whole seconds.
func drawTimeline(rt *rapid.T, label, good, bad, hang string) string {
	answers := []string{good, bad, hang}
	weights := rapid.IntRange(0, 9)
	pick := func(l string) string {
		w := weights.Draw(rt, l)
		switch {
		case w < 5:
			return answers[0]
		case w < 9:
			return answers[1]
		}
		return answers[2]
	}
	parts := []string{pick(label + "-first")}
	at := 0
	for i := range rapid.IntRange(0, 4).Draw(rt, label+"-changes") {
		at += rapid.IntRange(1, 40).Draw(rt, fmt.Sprintf("%s-after-%d", label, i))
		parts = append(parts, fmt.Sprintf("%ds:%s", at, pick(fmt.Sprintf("%s-%d", label, i))))
	}
	return strings.Join(parts, ",")
}

// drawProbe draws one probe of kind k on its own endpoint, and the
// FAKECRI_ script of that endpoint.
func drawProbe(rt *rapid.T, k ProbeKind) (*corev1.Probe, [2]string) {
	label := [...]string{"live", "ready", "start"}[k]
	p := &corev1.Probe{
		PeriodSeconds:       int32(rapid.IntRange(1, 10).Draw(rt, label+"-period")),
		TimeoutSeconds:      int32(rapid.IntRange(1, 2).Draw(rt, label+"-timeout")),
		FailureThreshold:    int32(rapid.IntRange(1, 4).Draw(rt, label+"-failures")),
		InitialDelaySeconds: int32(rapid.IntRange(0, 5).Draw(rt, label+"-delay")),
		SuccessThreshold:    1,
	}
	if k == ReadinessProbe {
		p.SuccessThreshold = int32(rapid.IntRange(1, 3).Draw(rt, label+"-successes"))
	}
	if k != ReadinessProbe && rapid.Bool().Draw(rt, label+"-own-grace") {
		g := int64(rapid.IntRange(1, 10).Draw(rt, label+"-grace"))
		p.TerminationGracePeriodSeconds = &g
	}
	port := 8000 + int(k)
	var env [2]string
	switch rapid.SampledFrom(probeHandlers).Draw(rt, label+"-handler") {
	case "exec":
		p.Exec = &corev1.ExecAction{Command: []string{"check-" + label}}
		env = [2]string{"FAKECRI_EXEC", "check-" + label + "=" + drawTimeline(rt, label, "0", "1", "hang")}
	case "http":
		p.HTTPGet = &corev1.HTTPGetAction{Port: intstr.FromInt(port), Path: "/" + label}
		env = [2]string{"FAKECRI_HTTP", fmt.Sprintf("%d/%s=%s", port, label, drawTimeline(rt, label, "200", "500", "hang"))}
	case "tcp":
		p.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt(port)}
		env = [2]string{"FAKECRI_TCP", fmt.Sprintf("%d=%s", port, drawTimeline(rt, label, "up", "down", "hang"))}
	default:
		p.GRPC = &corev1.GRPCAction{Port: int32(port)}
		env = [2]string{"FAKECRI_GRPC", fmt.Sprintf("%d=%s", port, drawTimeline(rt, label, "serving", "not_serving", "hang"))}
	}
	return p, env
}

// drawProbedPod draws a pod whose container has some of the three probes.
// Endpoints of one kind share a FAKECRI_ variable, so two probes of the
// same handler kind are joined into one rule list.
func drawProbedPod(rt *rapid.T, name, node string) *corev1.Pod {
	opts := []PodOption{Grace(int64(rapid.IntRange(1, 10).Draw(rt, "pod-grace")))}
	envs := map[string][]string{}
	var order []string
	for _, k := range probeKinds {
		if !rapid.Bool().Draw(rt, fmt.Sprintf("has-%d", k)) {
			continue
		}
		p, env := drawProbe(rt, k)
		opts = append(opts, WithProbe("app", k, p))
		if envs[env[0]] == nil {
			order = append(order, env[0])
		}
		envs[env[0]] = append(envs[env[0]], env[1])
	}
	for _, k := range order {
		opts = append(opts, Env("app", k, strings.Join(envs[k], ";")))
	}
	if rapid.Bool().Draw(rt, "restart-on-failure") {
		opts = append(opts, Restart(corev1.RestartPolicyOnFailure))
	}
	return NewPod(name, node, opts...)
}

// TestScenarioProbeFailure is the probe-failure scenario: pods with
// generated probes (each handler kind, random thresholds, periods, delays
// and grace) whose endpoints turn healthy, unhealthy, hanging and flapping
// over time, pods deleted, and the agent crashing and restarting. The
// probe invariants (ready-is-true, liveness-restarts, startup-protects,
// fresh-probe-results) and every other safety invariant hold throughout,
// and the node converges once the faults stop.
func TestScenarioProbeFailure(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64().Draw(rt, "seed")
		h := harness.New(harness.Config{Seed: seed})
		defer h.Close()
		h.StartAgent()
		c := NewChecker(h)
		created, deleted := []string{}, map[string]bool{}
		for i := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			switch rapid.IntRange(0, 5).Draw(rt, "action") {
			case 0, 1, 2:
				name := fmt.Sprintf("p%d", i)
				if _, err := Create(h, drawProbedPod(rt, name, h.NodeName)); err != nil {
					rt.Fatal(err)
				}
				created = append(created, name)
			case 3:
				if len(created) > 0 {
					name := created[rapid.IntRange(0, len(created)-1).Draw(rt, "victim")]
					if _, ok := APIPod(h, "default", name); ok && !deleted[name] {
						if err := h.API.User().DeletePodGracefully("default", name, nil); err != nil {
							rt.Fatal(err)
						}
						deleted[name] = true
					}
				}
			case 4:
				h.CrashAgent()
				if err := RunChecked(h, c, time.Duration(rapid.IntRange(0, 5000).Draw(rt, "downtime-ms"))*time.Millisecond, 100*time.Millisecond); err != nil {
					rt.Fatal(err)
				}
				h.StartAgent()
			case 5:
				// time passes
			}
			if err := RunChecked(h, c, time.Duration(rapid.IntRange(1, 60).Draw(rt, "run-s"))*time.Second, 100*time.Millisecond); err != nil {
				rt.Fatal(err)
			}
		}
		if err := RunChecked(h, c, 3*time.Minute, 100*time.Millisecond); err != nil {
			rt.Fatal(err)
		}
		for _, v := range c.Violations() {
			rt.Errorf("%s", v)
		}
		// Probes keep killing containers: a kill just before the end is
		// not in the status yet. Give the status a few seconds to catch up.
		for range 5 {
			if runningStatusesMatch(h) {
				break
			}
			if err := RunChecked(h, c, time.Second, 100*time.Millisecond); err != nil {
				rt.Fatal(err)
			}
		}
		r := &run{h: h, c: c, created: created, deleted: deleted, manifests: map[string]bool{}}
		for _, v := range r.liveness() {
			rt.Errorf("%s", v)
		}
	})
}

// runningStatusesMatch reports whether every container the API reports
// running runs.
func runningStatusesMatch(h *harness.Harness) bool {
	running := map[string]bool{}
	for _, ct := range TrueContainers(h) {
		if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running["fakecri://"+ct.ID] = true
		}
	}
	for _, p := range h.API.User().ListAllPods() {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil && !running[cs.ContainerID] {
				return false
			}
		}
	}
	return true
}
