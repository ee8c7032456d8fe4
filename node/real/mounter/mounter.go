// Package mounter is the production side of deps.Mounter, on
// k8s.io/mount-utils.
package mounter

import (
	"errors"
	"fmt"
	"io/fs"

	"k8s.io/mount-utils"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Mounter implements deps.Mounter with the system's mount(8).
type Mounter struct{ m mount.Interface }

var _ deps.Mounter = Mounter{}

// New returns the system's mounter.
func New() Mounter { return Mounter{m: mount.New("")} }

// MountTmpfs mounts a tmpfs at dir.
func (r Mounter) MountTmpfs(dir string, sizeBytes int64) error {
	var opts []string
	if sizeBytes > 0 {
		opts = append(opts, fmt.Sprintf("size=%d", sizeBytes))
	}
	return r.m.Mount("tmpfs", dir, "tmpfs", opts)
}

// Unmount unmounts dir unless nothing is mounted there.
func (r Mounter) Unmount(dir string) error {
	mounted, err := r.IsMountPoint(dir)
	if err != nil || !mounted {
		return err
	}
	return r.m.Unmount(dir)
}

// IsMountPoint reports whether dir is a mount point (a missing dir is
// not).
func (r Mounter) IsMountPoint(dir string) (bool, error) {
	notMnt, err := mount.IsNotMountPoint(r.m, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return !notMnt, err
}
