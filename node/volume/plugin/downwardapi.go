package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// NameDownwardAPI is the downwardAPI plugin's directory name.
const NameDownwardAPI = "kubernetes.io~downward-api"

// downwardAPI is the downwardAPI plugin: the pod's fields and its
// containers' resources as files on a tmpfs.
type downwardAPI struct{}

func (downwardAPI) Name() string                          { return NameDownwardAPI }
func (downwardAPI) CanSupport(v *corev1.Volume) bool      { return v.DownwardAPI != nil }
func (downwardAPI) IgnoredFields(*corev1.Volume) []string { return nil }
func (downwardAPI) Storage(*corev1.Volume) Storage        { return Storage{} }
func (downwardAPI) memory() bool                          { return true }

func (downwardAPI) References(*corev1.Volume) ([]string, []string) { return noRefs() }

func (downwardAPI) fetch(ctx context.Context, h *Host, pod *corev1.Pod, _ *corev1.Volume) (sources, error) {
	return fetchObjects(ctx, h, pod, nil, nil)
}

func (downwardAPI) payload(_ *corev1.Pod, v *corev1.Volume, src sources) (Payload, error) {
	p := Payload{}
	return p, p.downward(v.DownwardAPI.Items, v.DownwardAPI.DefaultMode, src.downward)
}
