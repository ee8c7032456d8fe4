// Package dirwatch is the real deps.DirChanges: an inotify watch (through
// github.com/fsnotify/fsnotify) of the static pod manifest directory, so a
// manifest written, edited, removed or renamed is acted on at once, as the
// kubelet's file source does beside its periodic re-read.
package dirwatch

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Watcher watches directories on first use. Safe for concurrent use.
type Watcher struct {
	mu      sync.Mutex
	w       *fsnotify.Watcher
	pending map[string]chan struct{} // by watched directory; capacity 1
	closed  bool
}

var _ deps.DirChanges = (*Watcher)(nil)

// New returns a watcher; its inotify instance is made on the first Next.
func New() *Watcher { return &Watcher{pending: map[string]chan struct{}{}} }

// Next implements deps.DirChanges: it blocks until an entry of dir was
// created, written, removed or renamed (or dir itself went away) since the
// previous call returned, or until ctx ends.
func (w *Watcher) Next(ctx context.Context, dir string) error {
	ch, err := w.watch(filepath.Clean(dir))
	if err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch returns dir's pending-change channel, adding dir to the inotify
// watch (and starting the watch) the first time.
func (w *Watcher) watch(dir string) (chan struct{}, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, fmt.Errorf("watch %s: the watcher is closed", dir)
	}
	if ch, ok := w.pending[dir]; ok {
		return ch, nil
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
	ch := make(chan struct{}, 1)
	w.pending[dir] = ch
	return ch, nil
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
			for _, dir := range []string{filepath.Dir(ev.Name), filepath.Clean(ev.Name)} {
				ch, ok := w.pending[dir]
				if !ok {
					continue
				}
				select {
				case ch <- struct{}{}:
				default: // one pending change is enough
				}
				if dir == filepath.Clean(ev.Name) && ev.Has(fsnotify.Remove|fsnotify.Rename) {
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
			for _, ch := range w.pending {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			w.mu.Unlock()
		}
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
