package plugin

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// apiData is an API data type (configMap, secret, downwardAPI,
// projected): content computed from API objects and the pod, published
// atomically, mounted read-only and refreshed every resync. apiDataPlugin
// makes one a Plugin.
type apiData interface {
	Name() string
	CanSupport(v *corev1.Volume) bool
	IgnoredFields(v *corev1.Volume) []string
	References(v *corev1.Volume) (configMaps, secrets []string)
	Storage(v *corev1.Volume) Storage
	// fetch reads what v's content is computed from.
	fetch(ctx context.Context, h *Host, pod *corev1.Pod, v *corev1.Volume) (sources, error)
	// payload computes v's content from src.
	payload(pod *corev1.Pod, v *corev1.Volume, src sources) (Payload, error)
	// memory reports whether the volume is a tmpfs.
	memory() bool
}

// apiDataPlugin is the Plugin of an API data type.
type apiDataPlugin struct{ apiData }

// Dir is below the pod's volumes directory.
func (p apiDataPlugin) Dir(volumesDir string, v *corev1.Volume) string {
	return inPodDir(volumesDir, p, v)
}

// ReadOnly: API data volumes are always mounted read-only, as upstream.
func (apiDataPlugin) ReadOnly(*corev1.Volume) bool { return true }

// ResolveOnce: no, the content is refreshed.
func (apiDataPlugin) ResolveOnce(*corev1.Volume) bool { return false }

// SetUp publishes the volume's content (see setUpAPIData).
func (p apiDataPlugin) SetUp(ctx context.Context, h *Host, pod *corev1.Pod, v *corev1.Volume, dir string) (bool, error) {
	return setUpAPIData(ctx, h, p.apiData, pod, v, dir)
}

// IsSetUp: the content was published once, and the tmpfs is in place when
// memory-backed.
func (p apiDataPlugin) IsSetUp(h *Host, _ *corev1.Pod, _ *corev1.Volume, dir string) bool {
	return published(h.Files, dir) && (!p.memory() || tmpfsMounted(h, dir))
}

// TearDown unmounts a memory-backed volume's tmpfs.
func (p apiDataPlugin) TearDown(h *Host, dir string) error {
	if !p.memory() {
		return nil
	}
	return unmountTmpfs(h, dir)
}

// setUpAPIData fetches a volume's sources, computes its content and
// publishes it atomically (mounting its tmpfs first when memory-backed);
// the new content gets the pod's fsGroup before it is published (the
// whole volume, as upstream: the first write also creates files outside
// the timestamped directory).
func setUpAPIData(ctx context.Context, h *Host, p apiData, pod *corev1.Pod, v *corev1.Volume, dir string) (bool, error) {
	src, err := p.fetch(ctx, h, pod, v)
	if err != nil {
		return false, err
	}
	content, err := p.payload(pod, v, src)
	if err != nil {
		return false, err
	}
	mountedNow, err := ensureDir(h, dir, p.memory(), 0)
	if err != nil {
		return false, err
	}
	setPerms := func() error {
		if gid := fsGroup(pod); gid != nil {
			return setOwnership(h, dir, *gid, true)
		}
		return nil
	}
	wrote, err := writeAtomic(h.Files, dir, content, h.Now(), setPerms)
	return mountedNow || wrote, err
}

// fetchObjects reads the configMaps and secrets named (a missing one is
// nil in the result: the payload decides whether that is fatal) and sets
// the pod's downward API values and file user.
func fetchObjects(ctx context.Context, h *Host, pod *corev1.Pod, cms, secs []string) (sources, error) {
	src := sources{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		tokens: map[int]string{}, trustAnchors: map[int][]byte{},
		downward: func(item *corev1.DownwardAPIVolumeFile) (string, error) { return h.DownwardAPIValue(pod, item) }}
	if uid, ok := h.FSUser(pod); ok {
		src.fsUser = &uid
	}
	if len(cms)+len(secs) > 0 && h.Objects == nil {
		return src, errors.New("the agent has no apiserver to read configmaps and secrets from")
	}
	for _, name := range cms {
		cm, err := h.Objects.ConfigMap(ctx, pod.Namespace, name)
		if err != nil {
			return src, fmt.Errorf("get configmap %q: %w", name, err)
		}
		src.configMaps[name] = cm
	}
	for _, name := range secs {
		sec, err := h.Objects.Secret(ctx, pod.Namespace, name)
		if err != nil {
			return src, fmt.Errorf("get secret %q: %w", name, err)
		}
		src.secrets[name] = sec
	}
	return src, nil
}
