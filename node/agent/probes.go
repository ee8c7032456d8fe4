package agent

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/metrics"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/prober"
	"github.com/lockstep-dev/lockstep/node/runtimesync"
)

// newProber builds the probe manager: workers read the PLEG cache, probe
// through CRI exec and the probe network, and wake the pod's worker when a
// verdict changes.
func (a *Agent) newProber() *prober.Manager {
	cfg := prober.Config{
		Tasks:  a.d.Tasks,
		Clock:  a.d.Clock,
		Rand:   a.d.Rand,
		Runner: &prober.Runner{Execer: a.d.Runtime, Net: a.d.ProbeNet, Clock: a.d.Clock},
		View:   a.pleg.Cache().Get,
		Changed: func(uid types.UID, t prober.Type, r prober.Result) {
			// Liveness only matters when it fails; readiness and startup
			// change the status either way.
			if t != prober.Liveness || r == prober.Failure {
				a.WakePod(uid)
			}
		},
		Event:  a.containerEvent,
		HostIP: a.cfg.Node.HostIP,
		Log:    a.d.Log,
	}
	if a.cfg.Metrics != nil {
		cfg.Observer = probeMetrics{a.cfg.Metrics}
	}
	return prober.NewManager(cfg)
}

// unhealthy answers the runtime sync's question for pod: did a container
// instance fail its liveness or startup probe?
func (a *Agent) unhealthy(pod *corev1.Pod) func(string) (runtimesync.ProbeKill, bool) {
	return func(id string) (runtimesync.ProbeKill, bool) {
		_, t, grace, failed := a.pods.probes.Failed(pod, id)
		if !failed {
			return runtimesync.ProbeKill{}, false
		}
		return runtimesync.ProbeKill{Probe: strings.ToLower(t.String()), Grace: grace}, true
	}
}

func (a *Agent) containerEvent(pod *corev1.Pod, container, eventType, reason, message string) {
	if a.d.API.Events == nil || pod == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		FieldPath: podutil.ContainerFieldPath(pod, container)}
	a.d.API.Events.Event(ref, eventType, reason, message)
}

// probeMetrics adapts metrics.Metrics to prober.Observer.
type probeMetrics struct{ m *metrics.Metrics }

func (p probeMetrics) ObserveProbe(probeType, result string, pod *corev1.Pod, container string, d time.Duration) {
	p.m.ObserveProbe(probeType, result, metrics.ProbeTarget{
		Namespace: pod.Namespace, Pod: pod.Name, PodUID: string(pod.UID), Container: container,
	}, d)
}
