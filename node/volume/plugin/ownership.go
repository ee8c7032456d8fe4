package plugin

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
	rwMask   fs.FileMode = 0o660
	roMask   fs.FileMode = 0o440
	execMask fs.FileMode = 0o110
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
// fails. upstream applies no fsGroupChangePolicy to emptyDir, configMap,
// secret, downwardAPI and projected volumes (their files are new at each
// write), so neither does this; a local PersistentVolume's caller honours
// it (ownLocalVolume, rootNeedsOwnership).
func setOwnership(h *Host, dir string, gid int64, readOnly bool) error {
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	return own(h, dir, true, int(gid), mask)
}

// own changes one entry (isDir: a directory, else a file; links are
// handled by the caller's listing) after its children.
func own(h *Host, p string, isDir bool, gid int, mask fs.FileMode) error {
	if isDir {
		entries, err := h.Files.ReadDir(p)
		if err != nil {
			return fmt.Errorf("set ownership of %s: %w", p, err)
		}
		for _, e := range entries {
			child := path.Join(p, e.Name())
			if e.Type()&fs.ModeSymlink != 0 {
				if err := h.Files.Lchown(child, -1, gid); err != nil {
					h.Log.Warn("changing a volume link's group failed", "path", child, "error", err.Error())
				}
				continue
			}
			if err := own(h, child, e.IsDir(), gid, mask); err != nil {
				return err
			}
		}
	}
	if err := h.Files.Lchown(p, -1, gid); err != nil {
		h.Log.Warn("changing a volume file's group failed", "path", p, "error", err.Error())
	}
	info, err := h.Files.Stat(p)
	if err != nil {
		h.Log.Warn("reading a volume file's mode failed", "path", p, "error", err.Error())
		return nil
	}
	add := mask
	if isDir {
		add |= execMask | fs.ModeSetgid
	}
	mode := info.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky) | add
	if err := h.Files.Chmod(p, mode); err != nil {
		h.Log.Warn("changing a volume file's mode failed", "path", p, "error", err.Error())
	}
	return nil
}

// ownerReader is a Files port that can say who owns a path (the
// simulator's memfs, the daemon's osfiles).
type ownerReader interface {
	Owner(path string) (uid, gid int, ok bool)
}

// rootNeedsOwnership reports whether a volume's root directory lacks what
// setOwnership gives it (group gid, group rwx and setgid), as upstream's
// requiresPermissionChange decides for OnRootMismatch: anything it cannot
// read (a port that cannot say the owner, a file) needs the walk.
func rootNeedsOwnership(h *Host, dir string, gid int64) bool {
	owners, ok := h.Files.(ownerReader)
	if !ok {
		return true
	}
	_, g, ok := owners.Owner(dir)
	info, err := h.Files.Stat(dir)
	if !ok || err != nil || int64(g) != gid || !info.IsDir() {
		return true
	}
	want := rwMask | execMask
	return info.Mode().Perm()&want != want || info.Mode()&fs.ModeSetgid == 0
}
