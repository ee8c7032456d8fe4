package plugin

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// defaultMode is the mode of a published file when the volume sets none
// (the API's default for every API data volume).
const defaultMode fs.FileMode = 0o644

// File is one file an API data volume publishes: its path relative to the
// volume, content and mode.
type File struct {
	Path string
	Data []byte
	Mode fs.FileMode
	// FSUser, when set, owns the file (a projected token of a pod whose
	// containers all run as that user).
	FSUser *int64
}

// Payload is the complete content of an API data volume, by path.
type Payload map[string]File

// sources is what a payload is computed from: the objects the volume
// references (nil when missing), the downward API values of the pod and
// the user that owns its projected tokens.
type sources struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	// tokens are the service account tokens of a projected volume, by
	// the index of their source.
	tokens map[int]string
	// trustAnchors are the PEM certificates of a projected volume's
	// clusterTrustBundle sources, by source index (nil: an optional
	// source that matched nothing, published empty).
	trustAnchors map[int][]byte
	// downward is the value of a downwardAPI item of the pod.
	downward func(item *corev1.DownwardAPIVolumeFile) (string, error)
	// fsUser owns the projected tokens and trust anchors (nil: root).
	fsUser *int64
}

// modeOf returns an item's mode, else the volume's default, else 0644.
func modeOf(item, def *int32) fs.FileMode {
	switch {
	case item != nil:
		return fs.FileMode(*item) & fs.ModePerm
	case def != nil:
		return fs.FileMode(*def) & fs.ModePerm
	}
	return defaultMode
}

// add puts a file in p, refusing a path that could leave the volume.
func (p Payload) add(file string, data []byte, mode fs.FileMode) error {
	clean := path.Clean(file)
	if file == "" || path.IsAbs(file) || clean == ".." || strings.HasPrefix(clean, "../") || strings.HasPrefix(path.Base(clean), "..") {
		return fmt.Errorf("invalid path %q", file)
	}
	p[clean] = File{Path: clean, Data: data, Mode: mode}
	return nil
}

// addOwned puts a file owned by fsUser (nil: root) in p.
func (p Payload) addOwned(file string, data []byte, mode fs.FileMode, fsUser *int64) error {
	if err := p.add(file, data, mode); err != nil {
		return err
	}
	f := p[path.Clean(file)]
	f.FSUser = fsUser
	p[f.Path] = f
	return nil
}

// keyed publishes the keys of a ConfigMap or Secret: every key, or the
// listed items (a listed key that is missing is an error unless optional).
func (p Payload) keyed(kind, name string, data map[string][]byte, items []corev1.KeyToPath, def *int32, optional bool) error {
	if len(items) == 0 {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			if err := p.add(k, data[k], modeOf(nil, def)); err != nil {
				return fmt.Errorf("%s %q key %q: %w", kind, name, k, err)
			}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("configuration error: key %q not found in %s %q", it.Key, kind, name)
		}
		if err := p.add(it.Path, v, modeOf(it.Mode, def)); err != nil {
			return fmt.Errorf("%s %q key %q: %w", kind, name, it.Key, err)
		}
	}
	return nil
}

// configMapData merges a ConfigMap's text and binary data.
func configMapData(cm *corev1.ConfigMap) map[string][]byte {
	out := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	maps.Copy(out, cm.BinaryData)
	return out
}

// configMapPayload publishes a ConfigMap (nil: missing) into p.
func (p Payload) configMap(name string, cm *corev1.ConfigMap, items []corev1.KeyToPath, def *int32, optional *bool) error {
	if cm == nil {
		if optional != nil && *optional {
			return nil
		}
		return fmt.Errorf("configmap %q not found", name)
	}
	return p.keyed("configmap", name, configMapData(cm), items, def, optional != nil && *optional)
}

// secret publishes a Secret (nil: missing) into p.
func (p Payload) secret(name string, sec *corev1.Secret, items []corev1.KeyToPath, def *int32, optional *bool) error {
	if sec == nil {
		if optional != nil && *optional {
			return nil
		}
		return fmt.Errorf("secret %q not found", name)
	}
	return p.keyed("secret", name, sec.Data, items, def, optional != nil && *optional)
}

// downward publishes downwardAPI items into p, their values from value.
func (p Payload) downward(items []corev1.DownwardAPIVolumeFile, def *int32, value func(*corev1.DownwardAPIVolumeFile) (string, error)) error {
	for i := range items {
		v, err := value(&items[i])
		if err != nil {
			return fmt.Errorf("downwardAPI item %q: %w", items[i].Path, err)
		}
		if err := p.add(items[i].Path, []byte(v), modeOf(items[i].Mode, def)); err != nil {
			return fmt.Errorf("downwardAPI item %q: %w", items[i].Path, err)
		}
	}
	return nil
}

// projected publishes every supported source of a projected volume: a
// serviceAccountToken source publishes the token fetched for it, as
// upstream: owned by the user all the pod's containers run as (if one),
// mode 0600 when there is such a user or an fsGroup (the ownership step
// then makes it group-readable); a clusterTrustBundle source publishes its
// trust anchors the same way. A podCertificate source never gets here
// (fetchProjected refuses it).
func (p Payload) projected(pod *corev1.Pod, pv *corev1.ProjectedVolumeSource, src sources) error {
	def := pv.DefaultMode
	for i, s := range pv.Sources {
		var err error
		switch {
		case s.ConfigMap != nil:
			err = p.configMap(s.ConfigMap.Name, src.configMaps[s.ConfigMap.Name], s.ConfigMap.Items, def, s.ConfigMap.Optional)
		case s.Secret != nil:
			err = p.secret(s.Secret.Name, src.secrets[s.Secret.Name], s.Secret.Items, def, s.Secret.Optional)
		case s.DownwardAPI != nil:
			err = p.downward(s.DownwardAPI.Items, def, src.downward)
		case s.ServiceAccountToken != nil:
			mode, owner := ownedMode(pod, def, src.fsUser)
			if err = p.addOwned(s.ServiceAccountToken.Path, []byte(src.tokens[i]), mode, owner); err != nil {
				err = fmt.Errorf("serviceAccountToken %q: %w", s.ServiceAccountToken.Path, err)
			}
		case s.ClusterTrustBundle != nil:
			mode, owner := ownedMode(pod, def, src.fsUser)
			if err = p.addOwned(s.ClusterTrustBundle.Path, src.trustAnchors[i], mode, owner); err != nil {
				err = fmt.Errorf("clusterTrustBundle %q: %w", s.ClusterTrustBundle.Path, err)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ownedMode is the mode and owner of a projected token or trust bundle,
// as upstream: owned by the user all the pod's containers run as (owner,
// if one), mode 0600 when there is such a user or an fsGroup, else the
// volume's default mode.
func ownedMode(pod *corev1.Pod, def *int32, owner *int64) (fs.FileMode, *int64) {
	mode := modeOf(nil, def)
	if owner != nil || fsGroup(pod) != nil {
		mode = 0o600
	}
	return mode, owner
}
