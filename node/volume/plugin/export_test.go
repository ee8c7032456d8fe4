package plugin

import corev1 "k8s.io/api/core/v1"

// Sources is, for tests, what a payload is computed from.
type Sources = sources

// NewSources returns sources of the given objects and tokens, with
// downward API values from downward and projected files owned by fsUser.
func NewSources(cms map[string]*corev1.ConfigMap, secs map[string]*corev1.Secret, tokens map[int]string,
	downward func(*corev1.DownwardAPIVolumeFile) (string, error), fsUser *int64) Sources {
	return sources{configMaps: cms, secrets: secs, tokens: tokens, downward: downward, fsUser: fsUser}
}

// PayloadOf is the content v's plugin computes from src.
func PayloadOf(pod *corev1.Pod, v *corev1.Volume, src Sources) (Payload, error) {
	p, _ := For(v)
	return p.(apiDataPlugin).payload(pod, v, src)
}
