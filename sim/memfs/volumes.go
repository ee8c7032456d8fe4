package memfs

import (
	"io/fs"
	"path"
	"strings"
)

// CreateFile creates or replaces a file with the given content and mode;
// its directory must exist.
func (f *FS) CreateFile(name string, data []byte, perm fs.FileMode) error {
	name = path.Clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	if dir := path.Dir(name); dir != "/" && dir != "." && !f.dirs[dir] {
		return &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if f.dirs[name] {
		return &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	}
	delete(f.links, name)
	f.files[name] = append([]byte(nil), data...)
	if f.modes == nil {
		f.modes = map[string]fs.FileMode{}
	}
	f.modes[name] = perm.Perm()
	f.changedLocked(name)
	return nil
}

// Rename moves a file, symbolic link or directory tree, replacing a file
// or link at the destination in one step.
func (f *FS) Rename(from, to string) error {
	from, to = path.Clean(from), path.Clean(to)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	if dir := path.Dir(to); dir != "/" && dir != "." && !f.dirs[dir] {
		return &fs.PathError{Op: "rename", Path: to, Err: fs.ErrNotExist}
	}
	switch {
	case f.hasLink(from):
		target := f.links[from]
		delete(f.links, from)
		delete(f.files, to)
		f.links[to] = target
	case f.hasFile(from):
		data := f.files[from]
		delete(f.files, from)
		delete(f.links, to)
		f.files[to] = data
		f.modes[to] = f.modes[from]
		delete(f.modes, from)
		if o, ok := f.owners[from]; ok {
			f.owners[to] = o
			delete(f.owners, from)
		}
	case f.dirs[from]:
		f.moveTreeLocked(from, to)
	default:
		return &fs.PathError{Op: "rename", Path: from, Err: fs.ErrNotExist}
	}
	f.changedLocked(from, to)
	return nil
}

func (f *FS) hasLink(name string) bool { _, ok := f.links[name]; return ok }
func (f *FS) hasFile(name string) bool { _, ok := f.files[name]; return ok }

// moveTreeLocked renames a directory and everything under it.
func (f *FS) moveTreeLocked(from, to string) {
	move := func(k string) (string, bool) {
		if k == from {
			return to, true
		}
		if rest, ok := strings.CutPrefix(k, from+"/"); ok {
			return to + "/" + rest, true
		}
		return "", false
	}
	for k, v := range f.files {
		if n, ok := move(k); ok {
			delete(f.files, k)
			f.files[n] = v
		}
	}
	for k, v := range f.links {
		if n, ok := move(k); ok {
			delete(f.links, k)
			f.links[n] = v
		}
	}
	for k := range f.dirs {
		if n, ok := move(k); ok {
			delete(f.dirs, k)
			f.dirs[n] = true
		}
	}
	for k, v := range f.modes {
		if n, ok := move(k); ok {
			delete(f.modes, k)
			f.modes[n] = v
		}
	}
	for k, v := range f.owners {
		if n, ok := move(k); ok {
			delete(f.owners, k)
			f.owners[n] = v
		}
	}
}

// Lchown records the owner of a file, directory or link (not following
// a final link); -1 leaves an id as it is.
func (f *FS) Lchown(name string, uid, gid int) error {
	name = path.Clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	if !f.hasFile(name) && !f.hasLink(name) && !f.dirs[name] {
		return &fs.PathError{Op: "lchown", Path: name, Err: fs.ErrNotExist}
	}
	o := f.owners[name]
	if uid >= 0 {
		o.uid = uid
	}
	if gid >= 0 {
		o.gid = gid
	}
	f.owners[name] = o
	return nil
}

// Chmod sets the permission, setgid and sticky bits of a file or
// directory, following links.
func (f *FS) Chmod(name string, mode fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	r := f.resolveLocked(name)
	if !f.hasFile(r) && !f.dirs[r] {
		return &fs.PathError{Op: "chmod", Path: name, Err: fs.ErrNotExist}
	}
	f.modes[r] = mode & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)
	return nil
}

// Owner returns the user and group owning a path (following links) and
// whether it exists; what no Lchown touched is root's.
func (f *FS) Owner(name string) (uid, gid int, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.resolveLocked(name)
	if !f.hasFile(r) && !f.dirs[r] {
		return 0, 0, false
	}
	o := f.owners[r]
	return o.uid, o.gid, true
}

// Stat describes a file or directory, following symbolic links.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.resolveLocked(name)
	if data, ok := f.files[r]; ok {
		mode, ok := f.modes[r]
		if !ok {
			mode = 0o644
		}
		return entry{name: path.Base(r), size: int64(len(data)), perm: mode}, nil
	}
	if f.dirs[r] || r == "/" {
		return entry{name: path.Base(r), dir: true, perm: f.modes[r]}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}
