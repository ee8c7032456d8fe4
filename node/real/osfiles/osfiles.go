// Package osfiles is the production side of deps.Files: the operating
// system's file system.
package osfiles

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// FS implements deps.Files with package os. Its errors are os's
// *fs.PathError values, which name the path and satisfy errors.Is with
// fs.ErrNotExist and the like.
type FS struct{}

var _ deps.Files = FS{}

// New returns the OS file system.
func New() FS { return FS{} }

// ReadDir lists dir sorted by file name.
func (FS) ReadDir(dir string) ([]fs.DirEntry, error) { return os.ReadDir(dir) }

// ReadFile returns the content of path.
func (FS) ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }

// ReadFileTail returns the last max bytes of path.
func (FS) ReadFileTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := info.Size() - max
	if off < 0 {
		off = 0
	}
	buf := make([]byte, info.Size()-off)
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// MkdirAll creates dir and its missing parents with mode 0755 (before the
// umask); an existing directory is not an error.
func (FS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

// Remove removes a file or symbolic link; a missing one is not an error.
func (FS) Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// RemoveAll removes path and everything under it.
func (FS) RemoveAll(path string) error { return os.RemoveAll(path) }

// Symlink creates link pointing to target.
func (FS) Symlink(target, link string) error { return os.Symlink(target, link) }

// CreateFile creates or truncates path with mode perm (the umask does not
// apply: the mode is set explicitly) and writes data.
func (FS) CreateFile(path string, data []byte, perm fs.FileMode) error {
	if err := os.WriteFile(path, data, perm); err != nil {
		return err
	}
	return os.Chmod(path, perm)
}

// Rename renames from to to, atomically replacing what is at to.
func (FS) Rename(from, to string) error { return os.Rename(from, to) }

// Readlink returns a symbolic link's target.
func (FS) Readlink(path string) (string, error) { return os.Readlink(path) }

// Stat describes path, following symbolic links.
func (FS) Stat(path string) (fs.FileInfo, error) { return os.Stat(path) }

// Lchown sets the owner of path, not following a final symbolic link.
func (FS) Lchown(path string, uid, gid int) error { return os.Lchown(path, uid, gid) }

// Owner returns the user and group owning path (following links) and
// whether it could be read (the volume plugins' fsGroupChangePolicy
// OnRootMismatch check).
func (FS) Owner(path string) (uid, gid int, ok bool) {
	info, err := os.Stat(path)
	if err != nil {
		return 0, 0, false
	}
	st, isStat := info.Sys().(*syscall.Stat_t)
	if !isStat {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// Chmod sets the permission, setgid and sticky bits of path.
func (FS) Chmod(path string, mode fs.FileMode) error {
	return os.Chmod(path, mode&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky))
}
