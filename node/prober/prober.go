// Package prober runs the liveness, readiness and startup probes of a
// node's containers. Each (pod, container, probe type) has a worker whose
// decisions are a pure state machine (Worker: what to record, whether to
// probe, when to stop); the Manager runs the workers as tasks on the
// injected clock, keeps their results per container instance and tells
// the agent when a result changes; Runner carries out one probe (exec
// through CRI, HTTP GET, TCP connect, gRPC health through the probe
// network port).
package prober

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Type is a probe's kind.
type Type uint8

// The probe types.
const (
	Liveness Type = iota
	Readiness
	Startup
)

// Types lists every probe type, in a fixed order.
var Types = [...]Type{Liveness, Readiness, Startup}

// String is the type's name as the kubelet's metrics and events spell it.
func (t Type) String() string {
	switch t {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	}
	return "Startup"
}

// Of returns container c's probe of type t (nil: none).
func Of(c *corev1.Container, t Type) *corev1.Probe {
	switch t {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	}
	return c.StartupProbe
}

// Result is the outcome of a probe, or a worker's current verdict.
type Result uint8

// The results. Unknown is a startup probe's initial verdict (and, as a
// probe outcome, a probe that could not run: it changes nothing).
const (
	Unknown Result = iota
	Success
	Failure
)

// String names a result.
func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	}
	return "unknown"
}

// initial is a worker's verdict for a container instance it has not
// probed: readiness fails, liveness succeeds, startup is unknown.
func initial(t Type) Result {
	switch t {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// Spec is a probe's timing, with the API's defaults applied.
type Spec struct {
	InitialDelay     time.Duration
	Period           time.Duration
	Timeout          time.Duration
	SuccessThreshold int
	FailureThreshold int
}

// SpecOf returns p's timing; zero fields take the API's defaults (period
// 10 s, timeout 1 s, thresholds 1 and 3). A liveness or startup probe's
// success threshold is always 1.
func SpecOf(p *corev1.Probe, t Type) Spec {
	s := Spec{
		InitialDelay:     time.Duration(p.InitialDelaySeconds) * time.Second,
		Period:           time.Duration(p.PeriodSeconds) * time.Second,
		Timeout:          time.Duration(p.TimeoutSeconds) * time.Second,
		SuccessThreshold: int(p.SuccessThreshold),
		FailureThreshold: int(p.FailureThreshold),
	}
	if s.Period <= 0 {
		s.Period = 10 * time.Second
	}
	if s.Timeout <= 0 {
		s.Timeout = time.Second
	}
	if s.SuccessThreshold <= 0 || t != Readiness {
		s.SuccessThreshold = 1
	}
	if s.FailureThreshold <= 0 {
		s.FailureThreshold = 3
	}
	return s
}
