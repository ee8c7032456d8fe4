package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// podWatch is an open watch on the pods bound to one node. Events are
// queued at commit time; Next hands them out in order and waits on a
// signal of the simulator when there is none.
type podWatch struct {
	s     *Server
	id    uint64
	node  string
	sig   deps.Signal
	queue []deps.PodEvent
	// err, once set, is what the next Next returns; the watch is then
	// closed for good.
	err     error
	closed  bool
	stopped bool
}

var _ deps.PodWatch = (*podWatch)(nil)

// WatchPods watches the pods bound to nodeName. From a resource version
// "" or "0" it first sends an ADDED event for every such pod; from a
// numeric one it replays the changes after it, and its first Next fails
// with ResourceExpired when they are older than the watch window (or with a
// Timeout when the version is in the future). A pod whose node changes to
// or from nodeName is ADDED to or DELETED from this watch.
func (s *Server) WatchPods(ctx context.Context, nodeName, resourceVersion string) (deps.PodWatch, error) {
	if err := s.request(ctx, VerbWatch, fmt.Sprintf("pods on node %q", nodeName)); err != nil {
		return nil, err
	}
	defer s.response()
	if err := s.authorizePodList("watch", nodeName); err != nil {
		return nil, err
	}
	var from uint64
	if resourceVersion != "" {
		v, err := strconv.ParseUint(resourceVersion, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("watch pods on node %q: invalid resource version %q", nodeName, resourceVersion))
		}
		from = v
	}
	s.mu.Lock()
	defer s.unlock()
	s.watchIDs++
	w := &podWatch{s: s, id: s.watchIDs, node: nodeName}
	w.sig = s.tasks.NewSignal(fmt.Sprintf("apiserver watch#%d pods on node %q", w.id, nodeName))
	switch {
	case from == 0:
		for _, k := range sortedKeys(s.pods) {
			if p := s.pods[k]; p.Spec.NodeName == nodeName {
				w.queue = append(w.queue, deps.PodEvent{Type: deps.PodAdded, Pod: p.DeepCopy()})
			}
		}
	case from < s.compactedRV:
		w.err = apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, s.compactedRV+1))
	case from > s.rv:
		w.err = apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", from, s.rv), 1)
	default:
		i, _ := slices.BinarySearchFunc(s.podLog, from+1, func(c podChange, rv uint64) int {
			return compareRV(c.rv, rv)
		})
		for _, c := range s.podLog[i:] {
			w.deliverLocked(c)
		}
	}
	if w.err == nil && len(w.queue) > s.watchQueue {
		w.failLocked(w.tooSlow())
	}
	if w.err == nil {
		s.watches = append(s.watches, w)
	}
	return w, nil
}

func compareRV(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// publishLocked adds a committed pod change to the window and queues it
// on every open watch it concerns. Caller holds mu.
func (s *Server) publishLocked(c podChange) {
	s.podLog = append(s.podLog, c)
	if n := len(s.podLog) - s.window; n > 0 {
		s.compactedRV = s.podLog[n-1].rv
		clear(s.podLog[:n])
		s.podLog = s.podLog[n:]
	}
	for _, w := range slices.Clone(s.watches) {
		w.deliverLocked(c)
		if len(w.queue) > s.watchQueue {
			w.failLocked(w.tooSlow())
			s.removeWatchLocked(w)
		}
	}
}

// deliverLocked queues what change c means to this watch, if anything.
// Caller holds mu.
func (w *podWatch) deliverLocked(c podChange) {
	was := c.before != nil && c.before.Spec.NodeName == w.node
	is := c.after != nil && c.after.Spec.NodeName == w.node
	var ev deps.PodEvent
	switch {
	case is && !was:
		ev = deps.PodEvent{Type: deps.PodAdded, Pod: c.after.DeepCopy()}
	case is:
		ev = deps.PodEvent{Type: deps.PodModified, Pod: c.after.DeepCopy()}
	case was:
		ev = deps.PodEvent{Type: deps.PodDeleted, Pod: deletedPod(c.before, c.rv)}
	default:
		return
	}
	w.queue = append(w.queue, ev)
	w.sig.Notify()
}

func (w *podWatch) tooSlow() error {
	return apierrors.NewTooManyRequests(fmt.Sprintf("watch#%d of pods on node %q fell more than %d events behind", w.id, w.node, w.s.watchQueue), 1)
}

// failLocked breaks the watch with err, dropping what it has not yet
// delivered. Caller holds mu.
func (w *podWatch) failLocked(err error) {
	w.queue = nil
	w.err = err
	w.sig.Notify()
}

// removeWatchLocked stops delivering changes to w. Caller holds mu.
func (s *Server) removeWatchLocked(w *podWatch) {
	if i := slices.Index(s.watches, w); i >= 0 {
		s.watches = slices.Delete(s.watches, i, i+1)
	}
}

// breakWatchesLocked fails every open watch with the error made by errFor
// and returns how many there were. Caller holds mu.
func (s *Server) breakWatchesLocked(errFor func(*podWatch) error) int {
	ws := s.watches
	s.watches = nil
	for _, w := range ws {
		w.failLocked(errFor(w))
	}
	return len(ws)
}

// errWatchClosed is what Next returns after the watch broke or stopped.
var errWatchClosed = errors.New("watch closed")

// Next returns the next event, waiting for one until ctx ends. After an
// error the watch is closed and every later Next fails too.
func (w *podWatch) Next(ctx context.Context) (deps.PodEvent, error) {
	s := w.s
	for {
		if err := ctx.Err(); err != nil {
			return deps.PodEvent{}, fmt.Errorf("watch#%d of pods on node %q: %w", w.id, w.node, err)
		}
		s.mu.Lock()
		switch {
		case w.stopped || w.closed:
			s.mu.Unlock()
			return deps.PodEvent{}, fmt.Errorf("watch#%d of pods on node %q: %w", w.id, w.node, errWatchClosed)
		case w.err != nil:
			err := w.err
			w.err, w.closed = nil, true
			s.removeWatchLocked(w)
			s.mu.Unlock()
			s.log.Info("apiserver: watch broken", "watch", w.id, "node", w.node, "err", err)
			return deps.PodEvent{}, err
		case len(w.queue) > 0:
			ev := w.queue[0]
			w.queue[0] = deps.PodEvent{}
			w.queue = w.queue[1:]
			more := len(w.queue) > 0
			s.mu.Unlock()
			if more {
				w.sig.Notify() // pass the wake-up on to another reader
			}
			return ev, nil
		}
		s.mu.Unlock()
		if err := w.sig.Wait(ctx); err != nil {
			return deps.PodEvent{}, fmt.Errorf("watch#%d of pods on node %q: %w", w.id, w.node, err)
		}
	}
}

// Stop closes the watch; a Next waiting on it returns an error.
func (w *podWatch) Stop() {
	s := w.s
	s.mu.Lock()
	if w.stopped {
		s.mu.Unlock()
		return
	}
	w.stopped = true
	w.queue = nil
	s.removeWatchLocked(w)
	s.mu.Unlock()
	w.sig.Notify()
}
