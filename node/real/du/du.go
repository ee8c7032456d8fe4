// Package du is the real deps.DiskUsage: it walks a directory tree and
// adds up the blocks its entries occupy, as `du -x` does (hard links
// counted once, other filesystems mounted inside not entered).
package du

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Walker measures directory trees by walking them.
type Walker struct{}

var _ deps.DiskUsage = Walker{}

// New returns a Walker.
func New() Walker { return Walker{} }

type inode struct{ dev, ino uint64 }

// DirUsage walks the tree under path. Entries that vanish during the walk
// are skipped; a missing path is an error satisfying fs.ErrNotExist.
func (Walker) DirUsage(ctx context.Context, path string) (deps.DirUsage, error) {
	root, err := os.Lstat(path)
	if err != nil {
		return deps.DirUsage{}, fmt.Errorf("disk usage of %s: %w", path, err)
	}
	rootDev := devOf(root)
	seen := map[inode]bool{}
	var u deps.DirUsage
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			u.Bytes += uint64(info.Size())
			u.Inodes++
			return nil
		}
		if uint64(st.Dev) != rootDev {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			k := inode{uint64(st.Dev), st.Ino}
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		u.Bytes += uint64(st.Blocks) * 512
		u.Inodes++
		return nil
	})
	if err != nil {
		return deps.DirUsage{}, fmt.Errorf("disk usage of %s: %w", path, err)
	}
	return u, nil
}

func devOf(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}
