package deps

// Mounter mounts the memory-backed file systems of volumes (Secrets,
// emptyDir of medium Memory), makes the agent's root directory a shared
// mount and finds the mounts left below a pod's volumes. Real:
// k8s.io/mount-utils and mount(2) (node/real/mounter). Simulated: a
// model over memfs (sim/memfs).
type Mounter interface {
	// MountTmpfs mounts a tmpfs at dir (which must exist), of at most
	// sizeBytes (0: the kernel's default).
	MountTmpfs(dir string, sizeBytes int64) error
	// Unmount unmounts dir; a dir that is not a mount point is not an
	// error.
	Unmount(dir string) error
	// IsMountPoint reports whether something is mounted at dir.
	IsMountPoint(dir string) (bool, error)
	// MakeShared makes dir (which must exist) lie on a mount with shared
	// propagation, recursively (rshared), so that mounts made below it
	// by containers with Bidirectional propagation reach the host and
	// the host's reach HostToContainer ones. A dir already on a shared
	// mount is left as it is; otherwise dir is bind-mounted onto itself
	// first. Calling it again is a no-op: nothing is stacked.
	MakeShared(dir string) error
	// MountsUnder returns the mount points strictly below dir, each
	// after the mounts below it (the order to unmount them in); none
	// for a missing dir.
	MountsUnder(dir string) ([]string, error)
}
