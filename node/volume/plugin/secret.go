package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// NameSecret is the secret plugin's directory name.
const NameSecret = "kubernetes.io~secret"

// secret is the secret plugin: a Secret's keys as files on a tmpfs,
// published atomically and refreshed when the object changes.
type secret struct{}

func (secret) Name() string                          { return NameSecret }
func (secret) CanSupport(v *corev1.Volume) bool      { return v.Secret != nil }
func (secret) IgnoredFields(*corev1.Volume) []string { return nil }
func (secret) memory() bool                          { return true }

func (secret) References(v *corev1.Volume) ([]string, []string) {
	return nil, []string{v.Secret.SecretName}
}

// Storage: measured (it is in memory: not the pod's disk).
func (secret) Storage(*corev1.Volume) Storage { return Storage{Measured: true} }

func (secret) fetch(ctx context.Context, h *Host, pod *corev1.Pod, v *corev1.Volume) (sources, error) {
	return fetchObjects(ctx, h, pod, nil, []objRef{{v.Secret.SecretName, isTrue(v.Secret.Optional)}})
}

func (secret) payload(_ *corev1.Pod, v *corev1.Volume, src sources) (Payload, error) {
	s, p := v.Secret, Payload{}
	return p, p.secret(s.SecretName, src.secrets[s.SecretName], s.Items, s.DefaultMode, s.Optional)
}
