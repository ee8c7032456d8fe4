package scenarios

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ProbeKind says which probe a pod option sets.
type ProbeKind int

// The probe kinds.
const (
	LivenessProbe ProbeKind = iota
	ReadinessProbe
	StartupProbe
)

// WithProbe sets a probe of kind on container.
func WithProbe(container string, kind ProbeKind, p *corev1.Probe) PodOption {
	return func(pod *corev1.Pod) {
		c := findOrAdd(pod, container)
		switch kind {
		case LivenessProbe:
			c.LivenessProbe = p
		case ReadinessProbe:
			c.ReadinessProbe = p
		default:
			c.StartupProbe = p
		}
	}
}

// HTTPProbe is an HTTP GET probe of port and path with period and
// thresholds (timeout 1 s).
func HTTPProbe(port int, path string, period, success, failure int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(int32(port)), Path: path}},
		PeriodSeconds: period, SuccessThreshold: success, FailureThreshold: failure, TimeoutSeconds: 1,
	}
}
