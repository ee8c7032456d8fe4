package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// isSetUp reports whether a pod's volume is set up, from the disk alone:
// an emptyDir's directory exists with its mode (and fsGroup's setgid), an
// API data volume has published its content once, a hostPath volume
// passes its type check.
func (m *Manager) isSetUp(pod *corev1.Pod, v *corev1.Volume) bool {
	dir := podspec.VolumeDir(m.cfg.Node.RootDir, pod.UID, v)
	switch plugin, _ := podspec.VolumePlugin(v); plugin {
	case podspec.PluginEmptyDir:
		info, err := m.files.Stat(dir)
		return err == nil && emptyDirReady(pod, info) && m.mounted(dir, v)
	case podspec.PluginHostPath:
		return checkHostPathType(m.stat(dir), dir, v.HostPath.Type) == nil
	case podspec.PluginLocalVolume:
		return m.claimReady(dir)
	case podspec.PluginConfigMap, podspec.PluginSecret, podspec.PluginDownwardAPI, podspec.PluginProjected:
		return published(m.files, dir) && m.mounted(dir, v)
	}
	return true // unsupported: nothing to wait for (admission names it)
}

// setUp sets up (or refreshes) one volume of a pod and reports whether it
// changed what is on disk.
func (m *Manager) setUp(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) (bool, error) {
	dir := podspec.VolumeDir(m.cfg.Node.RootDir, pod.UID, v)
	switch plugin, _ := podspec.VolumePlugin(v); plugin {
	case podspec.PluginEmptyDir:
		return m.setUpEmptyDir(pod, dir, v)
	case podspec.PluginHostPath:
		return m.setUpHostPath(dir, v.HostPath.Type)
	case podspec.PluginLocalVolume:
		return m.setUpClaim(ctx, pod, v, dir)
	case podspec.PluginConfigMap, podspec.PluginSecret, podspec.PluginDownwardAPI, podspec.PluginProjected:
		src, err := m.fetch(ctx, pod, v)
		if err != nil {
			return false, err
		}
		p, err := payloadOf(pod, v, src)
		if err != nil {
			return false, err
		}
		mountedNow, err := m.ensureTmpfs(dir, v)
		if err != nil {
			return false, err
		}
		// The new content gets the pod's fsGroup before it is published
		// (the whole volume, as upstream: the first write also creates
		// files outside the timestamped directory).
		setPerms := func() error {
			if gid := fsGroup(pod); gid != nil {
				return m.setOwnership(dir, *gid, true)
			}
			return nil
		}
		wrote, err := writeAtomic(m.files, dir, p, m.clock.Now(), setPerms)
		return mountedNow || wrote, err
	}
	return false, nil
}

// fetch reads the ConfigMaps and Secrets a volume references, from the
// watch cache, else with a GET (a missing one is nil in the result: the
// payload decides whether that is fatal)
// and the service account tokens and trust anchors its projected sources
// ask for (a podCertificate source is an error: not supported).
func (m *Manager) fetch(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) (sources, error) {
	namespace := pod.Namespace
	src := sources{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}, tokens: map[int]string{}, trustAnchors: map[int][]byte{}, node: m.cfg.Node}
	cms, secs := podspec.VolumeSources(v)
	if len(cms)+len(secs) > 0 && m.objects == nil {
		return src, errors.New("the agent has no apiserver to read configmaps and secrets from")
	}
	for _, name := range cms {
		if cm, ok := m.watched.ConfigMap(namespace, name); ok {
			src.configMaps[name] = cm
			continue
		}
		cm, err := m.objects.GetConfigMap(ctx, namespace, name)
		if err != nil && !apierrors.IsNotFound(err) {
			return src, fmt.Errorf("get configmap %q: %w", name, err)
		}
		src.configMaps[name] = cm
	}
	for _, name := range secs {
		if sec, ok := m.watched.Secret(namespace, name); ok {
			src.secrets[name] = sec
			continue
		}
		sec, err := m.objects.GetSecret(ctx, namespace, name)
		if err != nil && !apierrors.IsNotFound(err) {
			return src, fmt.Errorf("get secret %q: %w", name, err)
		}
		src.secrets[name] = sec
	}
	if v.Projected == nil {
		return src, nil
	}
	for i, s := range v.Projected.Sources {
		switch {
		case s.ServiceAccountToken != nil:
			tr, err := m.tokens.Get(ctx, namespace, pod.Spec.ServiceAccountName, tokenRequest(pod, s.ServiceAccountToken))
			if err != nil {
				return src, err
			}
			src.tokens[i] = tr.Status.Token
		case s.ClusterTrustBundle != nil:
			anchors, err := m.trustAnchors(ctx, s.ClusterTrustBundle)
			if err != nil {
				return src, err
			}
			src.trustAnchors[i] = anchors
		case s.PodCertificate != nil:
			return src, errPodCertificate
		}
	}
	return src, nil
}

// DefaultTokenExpirationSeconds is the lifetime asked for a projected
// token whose source sets none (the API's default).
const DefaultTokenExpirationSeconds = 3600

// tokenRequest is the TokenRequest of a serviceAccountToken projection:
// its audience (none: the apiserver's), its lifetime, bound to the pod.
func tokenRequest(pod *corev1.Pod, tp *corev1.ServiceAccountTokenProjection) *authenticationv1.TokenRequest {
	exp := int64(DefaultTokenExpirationSeconds)
	if tp.ExpirationSeconds != nil {
		exp = *tp.ExpirationSeconds
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if tp.Audience != "" {
		tr.Spec.Audiences = []string{tp.Audience}
	}
	return tr
}

// setUpHostPath checks a hostPath volume's type, creating a directory or
// an empty file for the OrCreate types.
func (m *Manager) setUpHostPath(p string, typ *corev1.HostPathType) (bool, error) {
	info := m.stat(p)
	if info == nil && typ != nil {
		switch *typ {
		case corev1.HostPathDirectoryOrCreate:
			return true, m.files.MkdirAll(p)
		case corev1.HostPathFileOrCreate:
			if err := m.files.MkdirAll(path.Dir(p)); err != nil {
				return false, err
			}
			return true, m.files.CreateFile(p, nil, 0o644)
		}
	}
	return false, checkHostPathType(info, p, typ)
}

// stat returns what is at p, or nil when nothing is.
func (m *Manager) stat(p string) fs.FileInfo {
	info, err := m.files.Stat(p)
	if err != nil {
		return nil
	}
	return info
}

// checkHostPathType checks what is at p (info, nil when nothing) against a
// hostPath volume's type, as upstream's type checker does.
func checkHostPathType(info fs.FileInfo, p string, typ *corev1.HostPathType) error {
	if typ == nil || *typ == corev1.HostPathUnset {
		return nil
	}
	if info == nil {
		return fmt.Errorf("hostPath type check failed: %s does not exist", p)
	}
	mode := info.Mode()
	var ok bool
	var want string
	switch *typ {
	case corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory:
		ok, want = mode.IsDir(), "a directory"
	case corev1.HostPathFileOrCreate, corev1.HostPathFile:
		ok, want = mode.IsRegular(), "a file"
	case corev1.HostPathSocket:
		ok, want = mode&fs.ModeSocket != 0, "a socket file"
	case corev1.HostPathCharDev:
		ok, want = mode&fs.ModeCharDevice != 0, "a character device"
	case corev1.HostPathBlockDev:
		ok, want = mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice == 0, "a block device"
	default:
		return fmt.Errorf("hostPath type check failed: unknown type %q", *typ)
	}
	if !ok {
		return fmt.Errorf("hostPath type check failed: %s is not %s", p, want)
	}
	return nil
}
