package memfs

import (
	"io/fs"
	"path"
	"sync"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Mounts is the simulator's model of mounted tmpfs file systems over an
// FS: it records which directories are mount points. Unmounting empties
// the directory, as the contents of a tmpfs go with it.
type Mounts struct {
	fs      *FS
	mu      sync.Mutex
	mounted map[string]int64
}

var _ deps.Mounter = (*Mounts)(nil)

// NewMounts returns a model with nothing mounted.
func NewMounts(f *FS) *Mounts { return &Mounts{fs: f, mounted: map[string]int64{}} }

// MountTmpfs records a tmpfs at dir, which must exist.
func (m *Mounts) MountTmpfs(dir string, sizeBytes int64) error {
	dir = path.Clean(dir)
	if info, err := m.fs.Stat(dir); err != nil || !info.IsDir() {
		return &fs.PathError{Op: "mount", Path: dir, Err: fs.ErrNotExist}
	}
	// A new tmpfs's root is world-writable and sticky (mode 1777), as the
	// kernel makes it when no mode= option is given.
	if err := m.fs.Chmod(dir, fs.ModeSticky|fs.ModePerm); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mounted[dir] = sizeBytes
	return nil
}

// Unmount forgets the mount at dir and what was in it.
func (m *Mounts) Unmount(dir string) error {
	dir = path.Clean(dir)
	m.mu.Lock()
	_, ok := m.mounted[dir]
	delete(m.mounted, dir)
	m.mu.Unlock()
	if !ok {
		return nil
	}
	if err := m.fs.RemoveAll(dir); err != nil {
		return err
	}
	return m.fs.MkdirAll(dir)
}

// IsMountPoint reports whether a tmpfs is recorded at dir.
func (m *Mounts) IsMountPoint(dir string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.mounted[path.Clean(dir)]
	return ok, nil
}

// Size returns the size of the tmpfs at dir and whether one is there.
func (m *Mounts) Size(dir string) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.mounted[path.Clean(dir)]
	return s, ok
}
