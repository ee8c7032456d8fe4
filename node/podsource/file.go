package podsource

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// DefaultFilePeriod is how often the manifest directory is re-read when
// FileConfig.Period is zero.
const DefaultFilePeriod = 20 * time.Second

// FileConfig configures the static pod source.
type FileConfig struct {
	// Dir is the manifest directory. Empty: no static pods (the source
	// still delivers one empty snapshot, so the Merger sees it).
	Dir string
	// NodeName is this node's name.
	NodeName string
	// Period is the re-read interval; zero means DefaultFilePeriod.
	Period time.Duration
	// OnManifestError, when set, is told about every manifest (or the
	// directory) that cannot be used, once per distinct error per file,
	// typically to record an event. It runs on the source's task.
	OnManifestError func(file string, err error)
}

// FileSource reads static pod manifests from a directory through
// deps.Files: every file whose name does not start with a dot, whatever its
// extension (as the kubelet does), one pod each; subdirectories ignored.
// Every scan is a complete snapshot for the Merger. A manifest that does
// not parse or validate is reported and skipped; a manifest that cannot be
// read for another reason than being gone keeps the pod it last gave, so a
// transient I/O error kills nothing. A manifest the watch saw removed is
// removed, even when it is back by the time the directory is read: its
// pod goes (one snapshot without it) and, written back unchanged, comes
// again with the same UID — stopped and started again, as the kubelet's
// watch, which acts on the deletion event on its own, does.
type FileSource struct {
	d   deps.Core
	fs  deps.Files
	cfg FileConfig
	m   *Merger
	// changes, when set, wakes a scan as soon as the directory changes.
	changes deps.DirChanges

	// files holds the last scan's result per path.
	files map[string]*manifest
	// reported holds the error last reported per path (or the directory).
	reported map[string]string

	// mu guards removed: the base names of the manifests the watch saw
	// removed since the last scan.
	mu      sync.Mutex
	removed map[string]bool
}

// manifest is one file's content digest and what it gave.
type manifest struct {
	sum [sha256.Size]byte
	pod *corev1.Pod
	err error
}

// NewFileSource returns the static pod source feeding m. With changes
// (nil: none) it also scans as soon as the directory changes, as the
// kubelet's inotify watch makes it.
func NewFileSource(d deps.Core, fs deps.Files, changes deps.DirChanges, cfg FileConfig, m *Merger) *FileSource {
	if cfg.Period <= 0 {
		cfg.Period = DefaultFilePeriod
	}
	return &FileSource{d: d, fs: fs, changes: changes, cfg: cfg, m: m, files: map[string]*manifest{}, reported: map[string]string{},
		removed: map[string]bool{}}
}

// Run scans the directory at once, then whenever it changes and at the
// latest a period after the last scan, until ctx ends.
func (s *FileSource) Run(ctx context.Context) {
	if s.cfg.Dir == "" {
		s.m.Set(SourceFile, nil)
		return
	}
	changed := s.d.Tasks.NewSignal("podsource-file-changed")
	if s.changes != nil {
		s.d.Tasks.Go("podsource-file-watch", func() { s.watch(ctx, changed) })
	}
	s.scan()
	for {
		wctx, cancel := s.d.Clock.WithTimeout(ctx, s.cfg.Period)
		_ = changed.Wait(wctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.scan()
	}
}

// watch notifies changed at every change of the directory until ctx ends;
// while the directory cannot be watched (it does not exist yet) it tries
// again every period.
func (s *FileSource) watch(ctx context.Context, changed deps.Signal) {
	for ctx.Err() == nil {
		removed, err := s.changes.Next(ctx, s.cfg.Dir)
		switch {
		case err == nil:
			s.noteRemoved(removed)
			changed.Notify()
		case ctx.Err() != nil:
			return
		default:
			s.d.Log.Debug("static pod directory not watched; scanning every period", "dir", s.cfg.Dir, "error", err.Error())
			if s.d.Tasks.Sleep(ctx, s.cfg.Period) != nil {
				return
			}
		}
	}
}

// noteRemoved records manifests the watch saw removed, for the next scan.
func (s *FileSource) noteRemoved(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		s.removed[n] = true
	}
}

// dropRemoved forgets the manifests the watch saw removed since the last
// scan and, when one of them gave a pod, hands the Merger the snapshot
// without them: the deletion happened, whatever the directory holds now.
func (s *FileSource) dropRemoved() {
	s.mu.Lock()
	names := slices.Sorted(maps.Keys(s.removed))
	clear(s.removed)
	s.mu.Unlock()
	if brokenIgnoresRemovals {
		return
	}
	dropped := false
	for _, name := range names {
		path := filepath.Join(s.cfg.Dir, name)
		if mf := s.files[path]; mf != nil {
			dropped = dropped || mf.pod != nil
			delete(s.files, path)
		}
	}
	if dropped {
		pods, _ := podsOf(s.files)
		s.m.Set(SourceFile, pods)
	}
}

// podsOf returns the pods of files in the order of their paths; a pod
// whose namespace/name an earlier path defines already is left out, and
// dups names, for each such path, the path that defines it first.
func podsOf(files map[string]*manifest) (pods []*corev1.Pod, dups map[string]string) {
	owner := map[string]string{} // namespace/name → path
	dups = map[string]string{}
	for _, path := range slices.Sorted(maps.Keys(files)) {
		mf := files[path]
		if mf.pod == nil {
			continue
		}
		key := mf.pod.Namespace + "/" + mf.pod.Name
		if first, dup := owner[key]; dup {
			dups[path] = first
			continue
		}
		owner[key] = path
		pods = append(pods, mf.pod)
	}
	return pods, dups
}

// scan reads the directory once and hands the Merger the snapshot.
func (s *FileSource) scan() {
	failed := map[string]bool{}
	defer s.forgetFixed(failed)
	s.dropRemoved()

	entries, err := s.fs.ReadDir(s.cfg.Dir)
	if err == nil && s.d.Fault(deps.FaultManifestDirUnreadable) {
		entries, err = nil, deps.FaultManifestDirUnreadable.Err()
	}
	if errors.Is(err, fs.ErrNotExist) {
		// No directory: no static pods.
		s.files = map[string]*manifest{}
		s.m.Set(SourceFile, nil)
		return
	}
	if err != nil {
		// Keep what we have rather than kill every static pod on an I/O
		// error; the next scan tries again, and the files' errors stay
		// reported.
		for file := range s.reported {
			failed[file] = true
		}
		s.report(failed, s.cfg.Dir, fmt.Errorf("read static pod directory %s: %w", s.cfg.Dir, err))
		return
	}

	var names []string
	for _, e := range entries {
		if isManifestName(e.Name()) && !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)

	// The first-seen time of a pod whose manifest was reformatted but not
	// changed (same UID) carries over.
	seenOf := map[types.UID]string{}
	for _, mf := range s.files {
		if mf.pod != nil {
			seenOf[mf.pod.UID] = mf.pod.Annotations[AnnotationConfigSeen]
		}
	}

	next := make(map[string]*manifest, len(names))
	for _, name := range names {
		path := filepath.Join(s.cfg.Dir, name)
		mf, err := s.read(path, seenOf)
		if err != nil {
			s.report(failed, path, err)
		}
		if mf == nil {
			continue
		}
		next[path] = mf
		if mf.err != nil {
			s.report(failed, path, fmt.Errorf("static pod manifest %s: %w", path, mf.err))
		}
	}
	pods, dups := podsOf(next)
	for _, path := range slices.Sorted(maps.Keys(dups)) {
		mf := next[path]
		s.report(failed, path, fmt.Errorf("static pod manifest %s: pod %s is already defined by %s", path, mf.pod.Namespace+"/"+mf.pod.Name, dups[path]))
	}
	s.files = next
	s.m.Set(SourceFile, pods)
}

// read returns what the manifest at path gives, reusing the last result
// when its content did not change. A nil manifest means the file is gone;
// an error means it could not be read (the last result, if any, is kept).
func (s *FileSource) read(path string, seenOf map[types.UID]string) (*manifest, error) {
	data, err := s.fs.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // removed since the directory was read
	}
	if err != nil {
		err = fmt.Errorf("read static pod manifest %s: %w", path, err)
		if prev := s.files[path]; prev != nil && prev.err == nil {
			return prev, err
		}
		return nil, err
	}
	sum := sha256.Sum256(data)
	if prev := s.files[path]; prev != nil && prev.sum == sum {
		return prev, nil
	}
	pod, err := ParseManifest(data, s.cfg.NodeName, s.d.Clock.Now())
	if err == nil {
		if seen, ok := seenOf[pod.UID]; ok {
			pod.Annotations[AnnotationConfigSeen] = seen
		}
	}
	return &manifest{sum: sum, pod: pod, err: err}, nil
}

// report logs and hands on err about file unless the same error was the
// last one reported for it.
func (s *FileSource) report(failed map[string]bool, file string, err error) {
	failed[file] = true
	msg := err.Error()
	if s.reported[file] == msg {
		return
	}
	s.reported[file] = msg
	s.d.Log.Warn("static pod manifest skipped", "file", file, "error", err)
	if s.cfg.OnManifestError != nil {
		s.cfg.OnManifestError(file, err)
	}
}

// forgetFixed drops the reported errors of files that did not fail this
// scan, so that a file that breaks again is reported again.
func (s *FileSource) forgetFixed(failed map[string]bool) {
	for file := range s.reported {
		if !failed[file] {
			delete(s.reported, file)
		}
	}
}

// isManifestName reports whether a directory entry is a manifest to read:
// any name but a hidden one. A file that is not a pod manifest (an editor's
// swap file, notes) is reported as unparsable, as the kubelet does.
func isManifestName(name string) bool {
	return !strings.HasPrefix(name, ".")
}
