package volume

import (
	"context"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/volume/plugin"
)

// newHost is what the plugins act on: the manager's ports (built once, in
// New).
func (m *Manager) newHost() *plugin.Host {
	h := &plugin.Host{
		Files: m.files, Mounts: m.mounts, Log: m.log, Now: m.clock.Now,
		Tokens: m.tokens, Claims: m.claims, TrustBundles: m.trustBundles,
		DownwardAPIValue: func(pod *corev1.Pod, item *corev1.DownwardAPIVolumeFile) (string, error) {
			return podspec.DownwardAPIValue(pod, item, m.cfg.Node)
		},
		FSUser: podspec.FSUser,
	}
	if m.objects != nil {
		h.Objects = objectReader{m}
	}
	return h
}

// objectReader reads configMaps and secrets from the watch cache, else
// with a GET; a missing one is (nil, nil).
type objectReader struct{ m *Manager }

// ConfigMap reads configMap namespace/name.
func (r objectReader) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if cm, ok := r.m.watched.ConfigMap(namespace, name); ok {
		return cm, nil
	}
	cm, err := r.m.objects.GetConfigMap(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cm, err
}

// Secret reads secret namespace/name.
func (r objectReader) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if sec, ok := r.m.watched.Secret(namespace, name); ok {
		return sec, nil
	}
	sec, err := r.m.objects.GetSecret(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return sec, err
}

// volumeDir is where volume v of pod lives on the host, and its plugin
// (false: a type the agent does not support).
func (m *Manager) volumeDir(pod *corev1.Pod, v *corev1.Volume) (plugin.Plugin, string, bool) {
	p, ok := plugin.For(v)
	if !ok {
		return nil, "", false
	}
	return p, p.Dir(podspec.PodVolumesDir(m.cfg.Node.RootDir, pod.UID), v), true
}

// isSetUp reports whether a pod's volume is set up, from the disk alone
// (an unsupported one: nothing to wait for, admission names it).
func (m *Manager) isSetUp(pod *corev1.Pod, v *corev1.Volume) bool {
	p, dir, ok := m.volumeDir(pod, v)
	return !ok || p.IsSetUp(m.host, pod, v, dir)
}

// setUp sets up (or refreshes) one volume of a pod and reports whether it
// changed what is on disk.
func (m *Manager) setUp(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) (bool, error) {
	p, dir, ok := m.volumeDir(pod, v)
	if !ok {
		return false, nil
	}
	return p.SetUp(ctx, m.host, pod, v, dir)
}

// unmountAll tears down every volume of a pod found on disk (each
// plugin's directory), then unmounts what is still mounted below the
// pod's volumes (unmountNested), before the pod's directory goes.
func (m *Manager) unmountAll(uid types.UID) error {
	vols := podspec.PodVolumesDir(m.cfg.Node.RootDir, uid)
	for _, p := range plugin.All() {
		pdir := path.Join(vols, p.Name())
		entries, err := m.files.ReadDir(pdir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if err := p.TearDown(m.host, path.Join(pdir, e.Name())); err != nil {
				return err
			}
		}
	}
	return m.unmountNested(vols)
}

// unmountNested unmounts every mount left below a pod's volumes
// directory: what a container with Bidirectional propagation mounted
// inside its volume reaches the host (the root directory is a shared
// mount, ShareRootDir) and outlives the container. Removing the pod's
// directory over such a mount would delete the mounted file system's
// content and then fail on the busy mount point, so it is unmounted
// first, the deepest mounts first; one still there is an error and the
// directory stays.
func (m *Manager) unmountNested(vols string) error {
	if m.mounts == nil {
		return nil
	}
	left, err := m.mounts.MountsUnder(vols)
	if err != nil {
		return fmt.Errorf("list the mounts below %s: %w", vols, err)
	}
	for _, mp := range left {
		if err := m.mounts.Unmount(mp); err != nil {
			return fmt.Errorf("unmount %s, mounted below the pod's volumes: %w", mp, err)
		}
	}
	if left, err = m.mounts.MountsUnder(vols); err == nil && len(left) > 0 {
		err = fmt.Errorf("%s still mounted below the pod's volumes", strings.Join(left, ", "))
	}
	return err
}
