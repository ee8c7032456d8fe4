package memfs

import (
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Mounts is the simulator's model of mounted tmpfs file systems over an
// FS: it records which directories are mount points. Unmounting empties
// the directory, as the contents of a tmpfs go with it. It also records
// the directories made shared mounts (MakeShared) and how many times
// each was bind-mounted onto itself for it.
type Mounts struct {
	fs      *FS
	mu      sync.Mutex
	mounted map[string]int64
	binds   map[string]int
}

var _ deps.Mounter = (*Mounts)(nil)

// NewMounts returns a model with nothing mounted and nothing shared (the
// host's / is private, as on a host without systemd).
func NewMounts(f *FS) *Mounts {
	return &Mounts{fs: f, mounted: map[string]int64{}, binds: map[string]int{}}
}

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

// MakeShared records dir, which must exist, as a shared bind mount of
// itself unless it already lies on one (it or a directory above it was
// made shared).
func (m *Mounts) MakeShared(dir string) error {
	dir = path.Clean(dir)
	if info, err := m.fs.Stat(dir); err != nil || !info.IsDir() {
		return &fs.PathError{Op: "mount", Path: dir, Err: fs.ErrNotExist}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sharedLocked(dir) {
		return nil
	}
	m.binds[dir]++
	return nil
}

// Shared reports whether dir lies on a mount made shared (MakeShared of
// it or of a directory above it).
func (m *Mounts) Shared(dir string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sharedLocked(path.Clean(dir))
}

func (m *Mounts) sharedLocked(dir string) bool {
	for d := dir; ; d = path.Dir(d) {
		if m.binds[d] > 0 {
			return true
		}
		if d == "/" || d == "." {
			return false
		}
	}
}

// Binds returns how many times dir was bind-mounted onto itself to make
// it shared (more than one: stacked mounts).
func (m *Mounts) Binds(dir string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.binds[path.Clean(dir)]
}

// MountsUnder returns the tmpfs mount points strictly below dir, deepest
// first (then by name, descending).
func (m *Mounts) MountsUnder(dir string) ([]string, error) {
	dir = path.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for mp := range m.mounted {
		if strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if d := strings.Count(b, "/") - strings.Count(a, "/"); d != 0 {
			return d
		}
		return strings.Compare(b, a)
	})
	return out, nil
}
