package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// dataLink is the symbolic link naming the directory that holds a
// volume's current content; the user-visible names link through it.
const (
	dataLink    = "..data"
	dataLinkTmp = "..data_tmp"
)

// published reports whether an API data volume's content was published
// at least once (its ..data link exists): the volume is set up.
func published(files deps.Files, dir string) bool {
	_, err := files.Readlink(path.Join(dir, dataLink))
	return err == nil
}

// writeAtomic publishes p in dir as upstream's atomic writer does: the
// files go into a new timestamped directory, the ..data link is swapped to
// it with one rename, and each top-level name is a link through ..data,
// so a reader sees either the old set or the new one, never a mix. A file
// with an FSUser is given to that user; setPerms (nil: none) runs once the
// new files are written and before they are published. It does nothing
// when dir already holds exactly p, and reports whether it wrote.
func writeAtomic(files deps.Files, dir string, p Payload, now time.Time, setPerms func() error) (bool, error) {
	if err := files.MkdirAll(dir); err != nil {
		return false, err
	}
	old, _ := files.Readlink(path.Join(dir, dataLink))
	if old != "" {
		cur, err := readTree(files, path.Join(dir, old), "")
		if err == nil && samePayload(cur, p) {
			return false, nil
		}
	}
	ts, err := newTimestampDir(files, dir, now)
	if err != nil {
		return false, err
	}
	for _, f := range sortedFiles(p) {
		full := path.Join(dir, ts, f.Path)
		if err := files.MkdirAll(path.Dir(full)); err != nil {
			return false, err
		}
		if err := files.CreateFile(full, f.Data, f.Mode); err != nil {
			return false, err
		}
		if f.FSUser != nil {
			if err := files.Lchown(full, int(*f.FSUser), -1); err != nil {
				return false, fmt.Errorf("chown %s: %w", full, err)
			}
		}
	}
	if setPerms != nil {
		if err := setPerms(); err != nil {
			return false, err
		}
	}
	if err := files.Remove(path.Join(dir, dataLinkTmp)); err != nil {
		return false, err
	}
	if err := files.Symlink(ts, path.Join(dir, dataLinkTmp)); err != nil {
		return false, err
	}
	if err := files.Rename(path.Join(dir, dataLinkTmp), path.Join(dir, dataLink)); err != nil {
		return false, err
	}
	if err := linkNames(files, dir, p); err != nil {
		return true, err
	}
	return true, removeStale(files, dir, ts)
}

// newTimestampDir creates ..<timestamp> in dir (with a counter when one
// of that instant exists) and returns its name.
func newTimestampDir(files deps.Files, dir string, now time.Time) (string, error) {
	base := ".." + now.UTC().Format("2006_01_02_15_04_05.000000000")
	name := base
	for i := 1; ; i++ {
		if _, err := files.Stat(path.Join(dir, name)); errors.Is(err, fs.ErrNotExist) {
			break
		}
		name = fmt.Sprintf("%s.%d", base, i)
	}
	return name, files.MkdirAll(path.Join(dir, name))
}

// linkNames makes each top-level name of p a link through ..data and
// removes the names p no longer has.
func linkNames(files deps.Files, dir string, p Payload) error {
	want := map[string]bool{}
	for _, f := range p {
		want[strings.SplitN(f.Path, "/", 2)[0]] = true
	}
	entries, err := files.ReadDir(dir)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") {
			continue
		}
		have[name] = true
		if !want[name] {
			if err := files.RemoveAll(path.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	for _, name := range sortedKeys(want) {
		if have[name] {
			continue
		}
		if err := files.Symlink(path.Join(dataLink, name), path.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// removeStale removes the timestamped directories other than keep (the
// previous content, and any left by a crash half-way through a write).
func removeStale(files deps.Files, dir, keep string) error {
	entries, err := files.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "..") || name == keep || name == dataLink || name == dataLinkTmp {
			continue
		}
		if err := files.RemoveAll(path.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// readTree reads the files below root (rel is the path so far).
func readTree(files deps.Files, root, rel string) (Payload, error) {
	out := Payload{}
	entries, err := files.ReadDir(path.Join(root, rel))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		p := path.Join(rel, e.Name())
		if e.IsDir() {
			sub, err := readTree(files, root, p)
			if err != nil {
				return nil, err
			}
			for k, v := range sub {
				out[k] = v
			}
			continue
		}
		data, err := files.ReadFile(path.Join(root, p))
		if err != nil {
			return nil, err
		}
		info, err := files.Stat(path.Join(root, p))
		if err != nil {
			return nil, err
		}
		out[p] = File{Path: p, Data: data, Mode: info.Mode().Perm()}
	}
	return out, nil
}

// samePayload reports whether two payloads hold the same files.
func samePayload(a, b Payload) bool {
	if len(a) != len(b) {
		return false
	}
	for k, f := range a {
		g, ok := b[k]
		if !ok || f.Mode != g.Mode || !bytes.Equal(f.Data, g.Data) {
			return false
		}
	}
	return true
}

func sortedFiles(p Payload) []File {
	out := make([]File, 0, len(p))
	for _, k := range sortedKeys(p) {
		out = append(out, p[k])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
