package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// NameConfigMap is the configMap plugin's directory name.
const NameConfigMap = "kubernetes.io~configmap"

// configMap is the configMap plugin: a ConfigMap's keys as files,
// published atomically and refreshed when the object changes.
type configMap struct{}

func (configMap) Name() string                          { return NameConfigMap }
func (configMap) CanSupport(v *corev1.Volume) bool      { return v.ConfigMap != nil }
func (configMap) IgnoredFields(*corev1.Volume) []string { return nil }
func (configMap) memory() bool                          { return false }

func (configMap) References(v *corev1.Volume) ([]string, []string) {
	return []string{v.ConfigMap.Name}, nil
}

// Storage: measured, and the pod's ephemeral storage in the summary (as
// upstream's IsLocalEphemeralVolume), not in eviction's sum.
func (configMap) Storage(*corev1.Volume) Storage {
	return Storage{Measured: true, PodEphemeral: true}
}

func (configMap) fetch(ctx context.Context, h *Host, pod *corev1.Pod, v *corev1.Volume) (sources, error) {
	return fetchObjects(ctx, h, pod, []objRef{{v.ConfigMap.Name, isTrue(v.ConfigMap.Optional)}}, nil)
}

func (configMap) payload(_ *corev1.Pod, v *corev1.Volume, src sources) (Payload, error) {
	s, p := v.ConfigMap, Payload{}
	return p, p.configMap(s.Name, src.configMaps[s.Name], s.Items, s.DefaultMode, s.Optional)
}
