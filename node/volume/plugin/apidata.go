package plugin

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// publishes it atomically in a directory set up as an emptyDir's (mode
// 0777, a tmpfs when memory-backed: upstream wraps these volumes in an
// emptyDir, medium Memory but for configMap's);
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
	if err := worldWritable(h, dir); err != nil {
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

// objRef names a configMap or secret a volume reads; optional: its
// volume (or every projected source naming it) may do without it.
type objRef struct {
	name     string
	optional bool
}

// isTrue reports whether an optional flag is set.
func isTrue(b *bool) bool { return b != nil && *b }

// fetchObjects reads the configMaps and secrets named and sets the pod's
// downward API values and file user. A missing object is nil in the
// result (the payload decides whether that is fatal), and so is an
// optional one the apiserver refuses to show (Forbidden: the node
// authorizer's answer for an object it cannot relate to the node, as for
// one that does not exist), so that an optional volume sets up empty
// with no FailedMount, as upstream's.
func fetchObjects(ctx context.Context, h *Host, pod *corev1.Pod, cms, secs []objRef) (sources, error) {
	src := sources{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		tokens: map[int]string{}, trustAnchors: map[int][]byte{},
		downward: func(item *corev1.DownwardAPIVolumeFile) (string, error) { return h.DownwardAPIValue(pod, item) }}
	if uid, ok := h.FSUser(pod); ok {
		src.fsUser = &uid
	}
	if len(cms)+len(secs) > 0 && h.Objects == nil {
		return src, errors.New("the agent has no apiserver to read configmaps and secrets from")
	}
	for _, ref := range cms {
		cm, err := h.Objects.ConfigMap(ctx, pod.Namespace, ref.name)
		if err := missingOptional(ref, err); err != nil {
			return src, fmt.Errorf("get configmap %q: %w", ref.name, err)
		}
		src.configMaps[ref.name] = cm
	}
	for _, ref := range secs {
		sec, err := h.Objects.Secret(ctx, pod.Namespace, ref.name)
		if err := missingOptional(ref, err); err != nil {
			return src, fmt.Errorf("get secret %q: %w", ref.name, err)
		}
		src.secrets[ref.name] = sec
	}
	return src, nil
}

// missingOptional is err of reading ref, nil when ref is optional and
// err says the object cannot be had (not found or forbidden).
func missingOptional(ref objRef, err error) error {
	if ref.optional && (apierrors.IsNotFound(err) || apierrors.IsForbidden(err)) {
		return nil
	}
	return err
}
