package volume

import (
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// memoryBacked reports whether a volume lives on a tmpfs (a Secret, a
// projected or downwardAPI volume, as upstream wraps them; an emptyDir of
// medium Memory) and the tmpfs's size (0: the default).
func memoryBacked(v *corev1.Volume) (bool, int64) {
	switch {
	case v.Secret != nil, v.Projected != nil, v.DownwardAPI != nil:
		return true, 0
	case v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory:
		if v.EmptyDir.SizeLimit != nil {
			return true, v.EmptyDir.SizeLimit.Value()
		}
		return true, 0
	}
	return false, 0
}

// mounted reports whether a memory-backed volume's tmpfs is in place
// (always true without a mounter: the volume is a plain directory).
func (m *Manager) mounted(dir string, v *corev1.Volume) bool {
	if ok, _ := memoryBacked(v); !ok || m.mounts == nil {
		return true
	}
	mnt, err := m.mounts.IsMountPoint(dir)
	return err == nil && mnt
}

// ensureTmpfs creates a memory-backed volume's directory and mounts its
// tmpfs unless it is there; it reports whether it mounted.
func (m *Manager) ensureTmpfs(dir string, v *corev1.Volume) (bool, error) {
	if err := m.files.MkdirAll(dir); err != nil {
		return false, err
	}
	ok, size := memoryBacked(v)
	if !ok || m.mounts == nil || m.mounted(dir, v) {
		return false, nil
	}
	if err := m.mounts.MountTmpfs(dir, size); err != nil {
		return false, fmt.Errorf("mount tmpfs at %s: %w", dir, err)
	}
	return true, nil
}

// unmountAll unmounts every tmpfs of a pod's volumes, found on disk (the
// memory-backed plugins' directories), before the pod's directory goes.
func (m *Manager) unmountAll(uid types.UID) error {
	if m.mounts == nil {
		return nil
	}
	for _, plugin := range []string{podspec.PluginEmptyDir, podspec.PluginSecret, podspec.PluginProjected, podspec.PluginDownwardAPI} {
		pdir := path.Join(podspec.PodVolumesDir(m.cfg.Node.RootDir, uid), plugin)
		entries, err := m.files.ReadDir(pdir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			dir := path.Join(pdir, e.Name())
			if err := m.mounts.Unmount(dir); err != nil {
				return fmt.Errorf("unmount %s: %w", dir, err)
			}
			if mnt, err := m.mounts.IsMountPoint(dir); err != nil || mnt {
				return fmt.Errorf("%s is still mounted (%v)", dir, err)
			}
		}
	}
	return nil
}
