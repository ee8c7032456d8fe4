// Package mounter is the production side of deps.Mounter, on
// k8s.io/mount-utils, /proc/self/mountinfo and mount(2).
package mounter

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// selfMountInfo is the mount table of the agent's mount namespace.
const selfMountInfo = "/proc/self/mountinfo"

// Mounter implements deps.Mounter with the system's mount(8), mount(2)
// and the mount table of the agent's mount namespace.
type Mounter struct {
	m mount.Interface
	// mountInfo is the mount table read; sys is mount(2), umount
	// umount(2). Tests give their own.
	mountInfo string
	sys       func(source, target, fstype string, flags uintptr, data string) error
	umount    func(target string, flags int) error
}

var _ deps.Mounter = Mounter{}

// New returns the system's mounter.
func New() Mounter {
	return Mounter{m: mount.New(""), mountInfo: selfMountInfo, sys: unix.Mount, umount: unix.Unmount}
}

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

// MakeShared makes dir lie on an rshared mount, as the kubelet does with
// its root directory at start (hostutil's MakeRShared): when the mount
// dir lies on (the last one in the mount table whose mount point
// contains it) is not shared, dir is bind-mounted onto itself and the
// new mount made rshared. A second call finds that mount shared and does
// nothing, so agent restarts stack no bind mounts.
func (r Mounter) MakeShared(dir string) error {
	dir = filepath.Clean(dir)
	infos, err := mount.ParseMountInfo(r.mountInfo)
	if err != nil {
		return fmt.Errorf("read the mount table %s: %w", r.mountInfo, err)
	}
	shared, err := onSharedMount(infos, dir)
	if err != nil || shared {
		return err
	}
	if err := r.sys(dir, dir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mount %s onto itself: %w", dir, err)
	}
	if err := r.sys("", dir, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make %s rshared: %w", dir, err)
	}
	return nil
}

// onSharedMount reports whether the mount dir lies on has shared
// propagation (a "shared:N" optional field): the last mount of the table
// whose mount point contains dir, as mounts over mounts come later.
func onSharedMount(infos []mount.MountInfo, dir string) (bool, error) {
	for i := len(infos) - 1; i >= 0; i-- {
		if !mount.PathWithinBase(dir, infos[i].MountPoint) {
			continue
		}
		return slices.ContainsFunc(infos[i].OptionalFields, func(f string) bool { return strings.HasPrefix(f, "shared:") }), nil
	}
	return false, fmt.Errorf("no mount in the mount table holds %s", dir)
}

// MountsUnder returns the mount points strictly below dir from the mount
// table, deepest first (a mount stacked several times is listed as many
// times).
func (r Mounter) MountsUnder(dir string) ([]string, error) {
	infos, err := mount.ParseMountInfo(r.mountInfo)
	if err != nil {
		return nil, fmt.Errorf("read the mount table %s: %w", r.mountInfo, err)
	}
	return below(infos, filepath.Clean(dir)), nil
}

// below lists the mount points of infos strictly below dir, deepest
// first, later mounts first among equals.
func below(infos []mount.MountInfo, dir string) []string {
	var out []string
	for i := len(infos) - 1; i >= 0; i-- {
		if mp := infos[i].MountPoint; mp != dir && mount.PathWithinBase(mp, dir) {
			out = append(out, mp)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return out
}

// UnmountTree unmounts everything mounted at dir or below it, deepest
// first, for the tools and tests that remove an agent's root directory
// (which the agent made a bind mount of itself and never unmounts).
func (r Mounter) UnmountTree(dir string) error {
	dir = filepath.Clean(dir)
	infos, err := mount.ParseMountInfo(r.mountInfo)
	if err != nil {
		return fmt.Errorf("read the mount table %s: %w", r.mountInfo, err)
	}
	points := below(infos, dir)
	for i := len(infos) - 1; i >= 0; i-- {
		if infos[i].MountPoint == dir {
			points = append(points, dir)
		}
	}
	for _, mp := range points {
		if err := r.umount(mp, 0); err != nil {
			return fmt.Errorf("unmount %s: %w", mp, err)
		}
	}
	return nil
}
