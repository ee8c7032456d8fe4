package plugin

import "fmt"

// tmpfsMounted reports whether a memory-backed volume's tmpfs is in place
// at dir (always true without a mounter: the volume is a plain
// directory).
func tmpfsMounted(h *Host, dir string) bool {
	if h.Mounts == nil {
		return true
	}
	mnt, err := h.Mounts.IsMountPoint(dir)
	return err == nil && mnt
}

// ensureDir creates a volume's directory and, for a memory-backed one
// (memory), mounts its tmpfs of size bytes (0: the default) unless it is
// there; it reports whether it mounted.
func ensureDir(h *Host, dir string, memory bool, size int64) (bool, error) {
	if err := h.Files.MkdirAll(dir); err != nil {
		return false, err
	}
	if !memory || tmpfsMounted(h, dir) {
		return false, nil
	}
	if err := h.Mounts.MountTmpfs(dir, size); err != nil {
		return false, fmt.Errorf("mount tmpfs at %s: %w", dir, err)
	}
	return true, nil
}

// unmountTmpfs unmounts the tmpfs at dir (none there is no error) and
// checks that it went.
func unmountTmpfs(h *Host, dir string) error {
	if h.Mounts == nil {
		return nil
	}
	if err := h.Mounts.Unmount(dir); err != nil {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	if mnt, err := h.Mounts.IsMountPoint(dir); err != nil || mnt {
		return fmt.Errorf("%s is still mounted (%v)", dir, err)
	}
	return nil
}
