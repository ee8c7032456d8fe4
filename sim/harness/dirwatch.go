package harness

import (
	"context"
	"maps"
	"path"
	"slices"
	"sync"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// dirChanges is the simulated inotify watch of one agent incarnation
// (deps.DirChanges): the in-memory tree tells it of every changed entry,
// and Next for a directory returns once an entry of it changed. Like an
// inotify watch, it sees changes only from the first Next for a directory
// on.
type dirChanges struct {
	tasks deps.Tasks

	mu      sync.Mutex
	watched map[string]deps.Signal // by directory
	// removed holds, by watched directory, the base names of its entries
	// removed or renamed away since its Next last returned.
	removed map[string]map[string]bool
}

// newDirChanges watches files for an agent whose tasks are tasks; stop
// ends the watch (when the agent stops).
func newDirChanges(files *memfs.FS, tasks deps.Tasks) (w *dirChanges, stop func()) {
	w = &dirChanges{tasks: tasks, watched: map[string]deps.Signal{}, removed: map[string]map[string]bool{}}
	return w, files.OnChange(w.changed)
}

// Next implements deps.DirChanges.
func (w *dirChanges) Next(ctx context.Context, dir string) ([]string, error) {
	dir = path.Clean(dir)
	w.mu.Lock()
	sig := w.watched[dir]
	if sig == nil {
		sig = w.tasks.NewSignal("dirwatch " + dir)
		w.watched[dir] = sig
		w.removed[dir] = map[string]bool{}
	}
	w.mu.Unlock()
	if err := sig.Wait(ctx); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	removed := slices.Sorted(maps.Keys(w.removed[dir]))
	clear(w.removed[dir])
	return removed, nil
}

// changed wakes the watch of name's directory, noting name's removal when
// gone (it runs under the tree's lock and does not use the tree).
func (w *dirChanges) changed(name string, gone bool) {
	dir := path.Dir(name)
	w.mu.Lock()
	sig := w.watched[dir]
	if sig != nil && gone {
		w.removed[dir][path.Base(name)] = true
	}
	w.mu.Unlock()
	if sig != nil {
		sig.Notify()
	}
}
