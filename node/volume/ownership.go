package volume

import (
	"fmt"
	"io/fs"
	"path"

	corev1 "k8s.io/api/core/v1"
)

// Ownership masks, as upstream's SetVolumeOwnership adds them: read-write
// (read-only for a read-only volume) for owner and group, plus search and
// setgid on directories so that new files inherit the group.
const (
	rwMask       fs.FileMode = 0o660
	roMask       fs.FileMode = 0o440
	execMask     fs.FileMode = 0o110
	emptyDirMode fs.FileMode = 0o777 // an emptyDir is writable by anyone, as upstream makes it
)

// fsGroup returns the pod's fsGroup (nil when none).
func fsGroup(pod *corev1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// setOwnership gives everything below dir, and dir itself, to group gid as
// upstream's SetVolumeOwnership does for the volume types that manage
// ownership: each entry's group becomes gid (a symbolic link's own, not
// its target's), each file gains rw (ro for a read-only volume) for owner
// and group, each directory that and search and setgid. The walk is
// post-order, as upstream's; an entry that cannot be changed is logged and
// skipped, as upstream does, and only a directory that cannot be read
// fails. upstream applies no fsGroupChangePolicy to these types (it
// passes none for emptyDir, configMap, secret, downwardAPI and projected
// volumes, whose files are new at each write), so neither does this.
func (m *Manager) setOwnership(dir string, gid int64, readOnly bool) error {
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	return m.own(dir, true, int(gid), mask)
}

// own changes one entry (isDir: a directory, else a file; links are
// handled by the caller's listing) after its children.
func (m *Manager) own(p string, isDir bool, gid int, mask fs.FileMode) error {
	if isDir {
		entries, err := m.files.ReadDir(p)
		if err != nil {
			return fmt.Errorf("set ownership of %s: %w", p, err)
		}
		for _, e := range entries {
			child := path.Join(p, e.Name())
			if e.Type()&fs.ModeSymlink != 0 {
				if err := m.files.Lchown(child, -1, gid); err != nil {
					m.log.Warn("changing a volume link's group failed", "path", child, "error", err.Error())
				}
				continue
			}
			if err := m.own(child, e.IsDir(), gid, mask); err != nil {
				return err
			}
		}
	}
	if err := m.files.Lchown(p, -1, gid); err != nil {
		m.log.Warn("changing a volume file's group failed", "path", p, "error", err.Error())
	}
	info, err := m.files.Stat(p)
	if err != nil {
		m.log.Warn("reading a volume file's mode failed", "path", p, "error", err.Error())
		return nil
	}
	add := mask
	if isDir {
		add |= execMask | fs.ModeSetgid
	}
	mode := info.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky) | add
	if err := m.files.Chmod(p, mode); err != nil {
		m.log.Warn("changing a volume file's mode failed", "path", p, "error", err.Error())
	}
	return nil
}

// setUpEmptyDir creates (and mounts, for medium Memory) an emptyDir,
// makes it writable by anyone, and gives it to the pod's fsGroup.
func (m *Manager) setUpEmptyDir(pod *corev1.Pod, dir string, v *corev1.Volume) (bool, error) {
	if _, err := m.ensureTmpfs(dir, v); err != nil {
		return false, err
	}
	// 0777, keeping the bits the directory has (a tmpfs root is sticky,
	// as upstream's emptyDir on medium Memory is).
	info, err := m.files.Stat(dir)
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", dir, err)
	}
	if err := m.files.Chmod(dir, info.Mode()&(fs.ModeSetgid|fs.ModeSticky)|emptyDirMode); err != nil {
		return false, fmt.Errorf("chmod %s: %w", dir, err)
	}
	if gid := fsGroup(pod); gid != nil {
		if err := m.setOwnership(dir, *gid, false); err != nil {
			return false, err
		}
	}
	return true, nil
}

// emptyDirReady reports whether an emptyDir's directory is as set-up
// leaves it: mode 0777, and setgid when the pod has an fsGroup (so a crash
// half-way through set-up is finished by the next pass).
func emptyDirReady(pod *corev1.Pod, info fs.FileInfo) bool {
	if !info.IsDir() || info.Mode().Perm() != emptyDirMode {
		return false
	}
	return fsGroup(pod) == nil || info.Mode()&fs.ModeSetgid != 0
}
