// Package memfs is an in-memory file tree implementing deps.Files, so the
// simulator can drop, edit and remove static pod manifests.
package memfs

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// FS is an in-memory tree of files and symbolic links. Directories exist
// implicitly while they hold a file, or explicitly after MkdirAll.
type FS struct {
	mu    sync.Mutex
	files map[string][]byte
	dirs  map[string]bool
	links map[string]string // link → target
	// modes are the permission (and setgid) bits of files and of the
	// directories whose mode was set; owners the owners that were set
	// (root otherwise).
	modes  map[string]fs.FileMode
	owners map[string]owner
	// gen counts the calls that may have changed the tree.
	gen uint64
	// watchers are told of every change (OnChange), in registration
	// order; lastWatch numbers them.
	watchers  []watcher
	lastWatch int
}

// Generation is a counter that moves with every call that may change the
// tree (a write, removal, rename, link, mode or owner change): an
// observer that saw the same generation before has nothing new to read.
func (f *FS) Generation() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen
}

// watcher is one OnChange registration.
type watcher struct {
	id int
	fn func(name string, gone bool)
}

// OnChange registers fn, called with the path of every file or symbolic
// link created, written, appended to, removed or renamed (both names; a
// removed tree's root), as inotify would report it to a watch on its
// directory; gone is set when nothing is left at the path (removed, or
// renamed away). fn runs under the tree's lock: it must not use the tree.
// The returned function unregisters it.
func (f *FS) OnChange(fn func(name string, gone bool)) (cancel func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastWatch++
	id := f.lastWatch
	f.watchers = append(f.watchers, watcher{id: id, fn: fn})
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.watchers = slices.DeleteFunc(f.watchers, func(w watcher) bool { return w.id == id })
	}
}

// changedLocked tells the watchers of changes to names.
func (f *FS) changedLocked(names ...string) {
	for _, w := range f.watchers {
		for _, n := range names {
			w.fn(n, !f.existsLocked(n))
		}
	}
}

// existsLocked reports whether anything (a file, link or directory) is
// at name itself, links not followed.
func (f *FS) existsLocked(name string) bool {
	_, file := f.files[name]
	_, link := f.links[name]
	return file || link || f.dirs[name] || f.hasChildLocked(name)
}

// hasChildLocked reports whether a file or link lies under dir (an
// implicit directory).
func (f *FS) hasChildLocked(dir string) bool {
	prefix := dir + "/"
	for n := range f.files {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	for n := range f.links {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// owner is who owns a path.
type owner struct{ uid, gid int }

var _ deps.Files = (*FS)(nil)

// New returns an empty tree.
func New() *FS {
	return &FS{files: map[string][]byte{}, dirs: map[string]bool{}, links: map[string]string{}, modes: map[string]fs.FileMode{},
		owners: map[string]owner{}}
}

// MkdirAll creates dir (and its parents).
func (f *FS) MkdirAll(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	f.mkdirAllLocked(dir)
	return nil
}

func (f *FS) mkdirAllLocked(dir string) {
	for d := path.Clean(dir); d != "/" && d != "."; d = path.Dir(d) {
		f.dirs[d] = true
	}
}

// WriteFile creates or replaces a file, creating its directory.
func (f *FS) WriteFile(name string, data []byte) {
	name = path.Clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	f.mkdirAllLocked(path.Dir(name))
	f.files[name] = append([]byte(nil), data...)
	f.changedLocked(name)
}

// Remove deletes a file or symbolic link; a missing one is not an error.
func (f *FS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	name = path.Clean(name)
	delete(f.files, name)
	delete(f.links, name)
	delete(f.modes, name)
	delete(f.owners, name)
	f.changedLocked(name)
	return nil
}

// RemoveAll deletes name and everything under it.
func (f *FS) RemoveAll(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	name = path.Clean(name)
	prefix := name + "/"
	for k := range f.files {
		if k == name || strings.HasPrefix(k, prefix) {
			delete(f.files, k)
		}
	}
	for k := range f.links {
		if k == name || strings.HasPrefix(k, prefix) {
			delete(f.links, k)
		}
	}
	for k := range f.dirs {
		if k == name || strings.HasPrefix(k, prefix) {
			delete(f.dirs, k)
		}
	}
	for k := range f.modes {
		if k == name || strings.HasPrefix(k, prefix) {
			delete(f.modes, k)
		}
	}
	for k := range f.owners {
		if k == name || strings.HasPrefix(k, prefix) {
			delete(f.owners, k)
		}
	}
	f.changedLocked(name)
	return nil
}

// Symlink creates link pointing to target (which need not exist); its
// directory must exist.
func (f *FS) Symlink(target, link string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	link = path.Clean(link)
	if dir := path.Dir(link); dir != "/" && dir != "." && !f.dirs[dir] {
		return &fs.PathError{Op: "symlink", Path: link, Err: fs.ErrNotExist}
	}
	if _, ok := f.links[link]; ok {
		return &fs.PathError{Op: "symlink", Path: link, Err: fs.ErrExist}
	}
	if _, ok := f.files[link]; ok {
		return &fs.PathError{Op: "symlink", Path: link, Err: fs.ErrExist}
	}
	f.links[link] = target
	f.changedLocked(link)
	return nil
}

// Readlink returns a symbolic link's target; links among the components
// before the last are followed, as the kernel does.
func (f *FS) Readlink(name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name = path.Clean(name)
	target, ok := f.links[path.Join(f.resolveLocked(path.Dir(name)), path.Base(name))]
	if !ok {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrNotExist}
	}
	return target, nil
}

// Exists reports whether a file (following symbolic links) exists.
func (f *FS) Exists(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.files[f.resolveLocked(name)]
	return ok
}

// resolveLocked follows symbolic links in every component of name (a
// bounded number of times).
func (f *FS) resolveLocked(name string) string {
	name = path.Clean(name)
	for range 40 {
		next, changed := f.resolveOnceLocked(name)
		if !changed {
			return next
		}
		name = next
	}
	return name
}

// resolveOnceLocked replaces the first component of name that is a link
// by its target.
func (f *FS) resolveOnceLocked(name string) (string, bool) {
	parts := strings.Split(strings.TrimPrefix(name, "/"), "/")
	cur := ""
	if path.IsAbs(name) {
		cur = "/"
	}
	for i, p := range parts {
		cur = path.Join(cur, p)
		target, ok := f.links[cur]
		if !ok {
			continue
		}
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(cur), target)
		}
		return path.Clean(path.Join(append([]string{target}, parts[i+1:]...)...)), true
	}
	return name, false
}

// ReadFile returns a copy of a file's content, following symbolic links.
func (f *FS) ReadFile(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, ok := f.files[f.resolveLocked(name)]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return append([]byte(nil), data...), nil
}

// ReadFileTail returns a copy of the last max bytes of a file.
func (f *FS) ReadFileTail(name string, max int64) ([]byte, error) {
	data, err := f.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		data = data[int64(len(data))-max:]
	}
	return data, nil
}

// ReadDir lists a directory's entries sorted by name.
func (f *FS) ReadDir(dir string) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir = path.Clean(dir)
	if !f.dirs[dir] {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
	}
	seen := map[string]entry{}
	prefix := dir + "/"
	for name, data := range f.files {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				seen[rest[:i]] = entry{name: rest[:i], dir: true}
			} else {
				seen[rest] = entry{name: rest, size: int64(len(data))}
			}
		}
	}
	for d := range f.dirs {
		if rest, ok := strings.CutPrefix(d, prefix); ok && !strings.Contains(rest, "/") {
			seen[rest] = entry{name: rest, dir: true}
		}
	}
	for l := range f.links {
		if rest, ok := strings.CutPrefix(l, prefix); ok && !strings.Contains(rest, "/") {
			seen[rest] = entry{name: rest, link: true}
		}
	}
	out := make([]fs.DirEntry, 0, len(seen))
	for _, e := range seen {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

type entry struct {
	name string
	dir  bool
	link bool
	size int64
	perm fs.FileMode // 0 means 0644 for a file
}

func (e entry) Name() string               { return e.name }
func (e entry) IsDir() bool                { return e.dir }
func (e entry) Type() fs.FileMode          { return e.mode().Type() }
func (e entry) Info() (fs.FileInfo, error) { return e, nil }
func (e entry) Size() int64                { return e.size }
func (e entry) ModTime() time.Time         { return time.Time{} }
func (e entry) Sys() any                   { return nil }
func (e entry) String() string             { return fmt.Sprintf("%s (%d bytes)", e.name, e.size) }
func (e entry) Mode() fs.FileMode          { return e.mode() }
func (e entry) mode() fs.FileMode {
	if e.dir {
		if e.perm != 0 {
			return fs.ModeDir | e.perm
		}
		return fs.ModeDir | 0o755
	}
	if e.link {
		return fs.ModeSymlink | 0o777
	}
	if e.perm != 0 {
		return e.perm
	}
	return 0o644
}

// AppendFile appends data to a file, creating it (the fake runtime writes
// container logs with it). Like containerd opening a container's log, it
// creates the file's own directory (the container's), but the directory
// above it (the pod's log directory, which the agent makes) must exist.
func (f *FS) AppendFile(name string, data []byte) error {
	name = path.Clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	dir := path.Dir(name)
	if parent := path.Dir(dir); parent != "/" && parent != "." && !f.dirs[parent] {
		return &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f.mkdirAllLocked(dir)
	f.files[name] = append(f.files[name], data...)
	f.changedLocked(name)
	return nil
}

// TreeUsage is the bytes of the files under dir and how many files,
// links and directories it holds (dir included), as du counts a tree of
// the simulated disk (sizes, not blocks). A missing dir is an error
// satisfying errors.Is(err, fs.ErrNotExist).
func (f *FS) TreeUsage(dir string) (bytes, inodes uint64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir = path.Clean(dir)
	if !f.dirs[dir] {
		return 0, 0, &fs.PathError{Op: "du", Path: dir, Err: fs.ErrNotExist}
	}
	prefix := dir + "/"
	inodes = 1
	for name, data := range f.files {
		if strings.HasPrefix(name, prefix) {
			bytes += uint64(len(data))
			inodes++
		}
	}
	for d := range f.dirs {
		if strings.HasPrefix(d, prefix) {
			inodes++
		}
	}
	for l := range f.links {
		if strings.HasPrefix(l, prefix) {
			inodes++
		}
	}
	return bytes, inodes, nil
}
