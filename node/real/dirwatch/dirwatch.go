// Package dirwatch is the real deps.DirChanges: an inotify watch (through
// github.com/fsnotify/fsnotify) of the static pod manifest directory, so a
// manifest written, edited, removed or renamed is acted on at once, as the
// kubelet's file source does beside its periodic re-read.
package dirwatch

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Watcher watches directories on first use. Safe for concurrent use.
type Watcher struct {
	mu      sync.Mutex
	w       *fsnotify.Watcher
	pending map[string]*dirState // by watched directory
	closed  bool
}

// dirState is one watched directory's pending change.
type dirState struct {
	changed chan struct{} // capacity 1: one pending change is enough
	// removed holds the base names of the entries removed or renamed
	// away since Next last returned.
	removed map[string]bool
}

var _ deps.DirChanges = (*Watcher)(nil)

// New returns a watcher; its inotify instance is made on the first Next.
func New() *Watcher { return &Watcher{pending: map[string]*dirState{}} }

// Next implements deps.DirChanges: it blocks until an entry of dir was
// created, written, removed or renamed (or dir itself went away) since the
// previous call returned, or until ctx ends, and returns the entries
// removed or renamed away meanwhile.
func (w *Watcher) Next(ctx context.Context, dir string) ([]string, error) {
	st, err := w.watch(filepath.Clean(dir))
	if err != nil {
		return nil, err
	}
	select {
	case <-st.changed:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	removed := slices.Sorted(maps.Keys(st.removed))
	clear(st.removed)
	return removed, nil
}

// watch returns dir's pending change, adding dir to the inotify watch
// (and starting the watch) the first time.
func (w *Watcher) watch(dir string) (*dirState, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, fmt.Errorf("watch %s: the watcher is closed", dir)
	}
	if st, ok := w.pending[dir]; ok {
		return st, nil
	}
	if w.w == nil {
		fw, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, fmt.Errorf("watch %s: %w", dir, err)
		}
		w.w = fw
		go w.forward(fw)
	}
	if err := w.w.Add(dir); err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	st := &dirState{changed: make(chan struct{}, 1), removed: map[string]bool{}}
	w.pending[dir] = st
	return st, nil
}

// forward turns the watch's events into pending changes of their
// directories until the watch is closed. A watched directory that is
// removed or renamed is dropped, so that the next Next watches it anew
// (or fails while it is missing).
func (w *Watcher) forward(fw *fsnotify.Watcher) {
	for {
		select {
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			w.mu.Lock()
			gone := ev.Has(fsnotify.Remove | fsnotify.Rename)
			for _, dir := range []string{filepath.Dir(ev.Name), filepath.Clean(ev.Name)} {
				st, ok := w.pending[dir]
				if !ok {
					continue
				}
				if gone && dir == filepath.Dir(ev.Name) {
					st.removed[filepath.Base(ev.Name)] = true
				}
				st.notify()
				if dir == filepath.Clean(ev.Name) && gone {
					delete(w.pending, dir)
					_ = fw.Remove(dir)
				}
			}
			w.mu.Unlock()
		case _, ok := <-fw.Errors:
			if !ok {
				return
			}
			// An overflow loses events: tell every directory, which then
			// re-reads itself whole.
			w.mu.Lock()
			for _, st := range w.pending {
				st.notify()
			}
			w.mu.Unlock()
		}
	}
}

// notify marks the directory changed (one pending change is enough).
func (st *dirState) notify() {
	select {
	case st.changed <- struct{}{}:
	default:
	}
}

// Close ends the watch.
func (w *Watcher) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.w == nil {
		return nil
	}
	return w.w.Close()
}
