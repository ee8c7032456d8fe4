package deps

// Mounter mounts the memory-backed file systems of volumes (Secrets,
// emptyDir of medium Memory). Real: k8s.io/mount-utils
// (node/real/mounter). Simulated: a model over memfs (sim/memfs).
type Mounter interface {
	// MountTmpfs mounts a tmpfs at dir (which must exist), of at most
	// sizeBytes (0: the kernel's default).
	MountTmpfs(dir string, sizeBytes int64) error
	// Unmount unmounts dir; a dir that is not a mount point is not an
	// error.
	Unmount(dir string) error
	// IsMountPoint reports whether something is mounted at dir.
	IsMountPoint(dir string) (bool, error)
}
