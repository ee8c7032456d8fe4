package scenarios

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeHandlers are the handler kinds a generated probe draws from.
var probeHandlers = []string{"exec", "http", "tcp", "grpc"}

// drawBool draws a boolean from d.
func drawBool(d Drawer, label string) bool { return d.Int(label, 0, 1) == 1 }

// drawTimeline draws an endpoint's answers over time: healthy, unhealthy
// (or hanging) and flapping phases of whole seconds.
func drawTimeline(d Drawer, label, good, bad, hang string) string {
	pick := func(l string) string {
		switch w := d.Int(l, 0, 9); {
		case w < 5:
			return good
		case w < 9:
			return bad
		}
		return hang
	}
	parts := []string{pick(label + "-first")}
	at := 0
	for i := range d.Int(label+"-changes", 0, 4) {
		at += d.Int(fmt.Sprintf("%s-after-%d", label, i), 1, 40)
		parts = append(parts, fmt.Sprintf("%ds:%s", at, pick(fmt.Sprintf("%s-%d", label, i))))
	}
	return strings.Join(parts, ",")
}

// drawProbe draws one probe of kind k on its own endpoint, and the
// FAKECRI_ variable (name, rule) that scripts that endpoint.
func drawProbe(d Drawer, k ProbeKind) (*corev1.Probe, [2]string) {
	label := [...]string{"live", "ready", "start"}[k]
	p := &corev1.Probe{
		PeriodSeconds:       int32(d.Int(label+"-period", 1, 10)),
		TimeoutSeconds:      int32(d.Int(label+"-timeout", 1, 2)),
		FailureThreshold:    int32(d.Int(label+"-failures", 1, 4)),
		InitialDelaySeconds: int32(d.Int(label+"-delay", 0, 5)),
		SuccessThreshold:    1,
	}
	if k == ReadinessProbe {
		p.SuccessThreshold = int32(d.Int(label+"-successes", 1, 3))
	}
	if k != ReadinessProbe && drawBool(d, label+"-own-grace") {
		g := int64(d.Int(label+"-grace", 1, 10))
		p.TerminationGracePeriodSeconds = &g
	}
	port := 8000 + int(k)
	var env [2]string
	switch probeHandlers[d.Int(label+"-handler", 0, len(probeHandlers)-1)] {
	case "exec":
		p.Exec = &corev1.ExecAction{Command: []string{"check-" + label}}
		env = [2]string{"FAKECRI_EXEC", "check-" + label + "=" + drawTimeline(d, label, "0", "1", "hang")}
	case "http":
		p.HTTPGet = &corev1.HTTPGetAction{Port: intstr.FromInt(port), Path: "/" + label}
		env = [2]string{"FAKECRI_HTTP", fmt.Sprintf("%d/%s=%s", port, label, drawTimeline(d, label, "200", "500", "hang"))}
	case "tcp":
		p.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt(port)}
		env = [2]string{"FAKECRI_TCP", fmt.Sprintf("%d=%s", port, drawTimeline(d, label, "up", "down", "hang"))}
	default:
		p.GRPC = &corev1.GRPCAction{Port: int32(port)}
		env = [2]string{"FAKECRI_GRPC", fmt.Sprintf("%d=%s", port, drawTimeline(d, label, "serving", "not_serving", "hang"))}
	}
	return p, env
}

// DrawProbedPod draws a pod whose container has some of the three probes,
// each on an endpoint whose answers turn healthy, unhealthy, hanging and
// flapping over time. Endpoints of one handler kind share a FAKECRI_
// variable, so two probes of the same kind are joined into one rule list.
func DrawProbedPod(d Drawer, name, node string) *corev1.Pod {
	opts := []PodOption{Grace(int64(d.Int("pod-grace", 1, 10)))}
	envs := map[string][]string{}
	var order []string
	for _, k := range probeKinds {
		if !drawBool(d, fmt.Sprintf("has-%d", k)) {
			continue
		}
		p, env := drawProbe(d, k)
		opts = append(opts, WithProbe("app", k, p))
		if envs[env[0]] == nil {
			order = append(order, env[0])
		}
		envs[env[0]] = append(envs[env[0]], env[1])
	}
	for _, k := range order {
		opts = append(opts, Env("app", k, strings.Join(envs[k], ";")))
	}
	if drawBool(d, "restart-on-failure") {
		opts = append(opts, Restart(corev1.RestartPolicyOnFailure))
	}
	// Drawn last, so the pods earlier seeds drew keep their shape: a
	// process that traps SIGTERM and exits 0 (after up to 2 s), as the
	// node suite's containers do; a probe kill must restart it all the
	// same under OnFailure (probe-restarts).
	if drawBool(d, "exits-zero-on-term") {
		opts = append(opts, StopsAfter("app", time.Duration(d.Int("term-exit-ms", 0, 2000))*time.Millisecond))
	}
	return NewPod(name, node, opts...)
}
