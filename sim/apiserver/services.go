package apiserver

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Services: users create, replace and delete them (User.PutService,
// User.DeleteService); the agent lists those of every namespace and
// watches them (a node may read every service). Their changes are kept in
// a window of the same size as the pods' so that a watch resumes from a
// resource version; Compact forgets them, DropWatches and Down break the
// open watches, as for pods.

// serviceChange is one committed service write; svc is the service after
// it (before it, for a delete). Never mutated.
type serviceChange struct {
	rv      uint64
	deleted bool
	svc     *corev1.Service
}

// serviceLog is the services' change window and open watches, guarded by
// Server.mu.
type serviceLog struct {
	changes     []serviceChange
	compactedRV uint64
	watches     []*serviceWatch
}

// serviceWatch is one open watch on the services of every namespace.
type serviceWatch struct {
	s     *Server
	id    uint64
	sig   deps.Signal
	queue []deps.ServiceEvent
	// err, once set, is what the next Next returns; the watch is then
	// closed for good.
	err     error
	closed  bool
	stopped bool
}

// ListServices lists the services of every namespace, by namespace and
// name, and the list's resource version.
func (s *Server) ListServices(ctx context.Context) ([]*corev1.Service, string, error) {
	if err := s.request(ctx, VerbList, "services of all namespaces"); err != nil {
		return nil, "", err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	out := make([]*corev1.Service, 0, len(s.objs.services))
	for _, k := range sortedKeys(s.objs.services) {
		out = append(out, s.objs.services[k].DeepCopy())
	}
	return out, strconv.FormatUint(s.rv, 10), nil
}

// WatchServices watches the services of every namespace after
// resourceVersion (numeric: the changes after it are replayed; its first
// Next fails with ResourceExpired when they are older than the window, or
// with a Timeout when the version is in the future).
func (s *Server) WatchServices(ctx context.Context, resourceVersion string) (deps.ServiceWatch, error) {
	if err := s.request(ctx, VerbWatch, "services of all namespaces"); err != nil {
		return nil, err
	}
	defer s.response()
	from, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("watch services: invalid resource version %q", resourceVersion))
	}
	s.mu.Lock()
	defer s.unlock()
	s.watchIDs++
	w := &serviceWatch{s: s, id: s.watchIDs}
	w.sig = s.tasks.NewSignal(fmt.Sprintf("apiserver watch#%d services", w.id))
	switch {
	case from < s.svc.compactedRV:
		w.err = apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, s.svc.compactedRV+1))
	case from > s.rv:
		w.err = apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", from, s.rv), 1)
	default:
		for _, c := range s.svc.changes {
			if c.rv > from {
				w.deliverLocked(c)
			}
		}
		s.svc.watches = append(s.svc.watches, w)
	}
	return w, nil
}

// publishServiceLocked commits a service change: it enters the window and
// every open watch. Caller holds mu.
func (s *Server) publishServiceLocked(c serviceChange) {
	s.svc.changes = append(s.svc.changes, c)
	if n := len(s.svc.changes) - s.window; n > 0 {
		s.svc.compactedRV = s.svc.changes[n-1].rv
		s.svc.changes = slices.Clone(s.svc.changes[n:])
	}
	for _, w := range s.svc.watches {
		w.deliverLocked(c)
	}
}

// compactServicesLocked forgets the services' change window. Caller holds
// mu.
func (s *Server) compactServicesLocked() {
	s.svc.changes = nil
	s.svc.compactedRV = s.rv
}

// breakServiceWatchesLocked fails every open service watch with the error
// errFor makes and returns how many there were. Caller holds mu.
func (s *Server) breakServiceWatchesLocked(errFor func() error) int {
	ws := s.svc.watches
	s.svc.watches = nil
	for _, w := range ws {
		w.queue, w.err = nil, errFor()
		w.sig.Notify()
	}
	return len(ws)
}

// deliverLocked queues change c. Caller holds mu.
func (w *serviceWatch) deliverLocked(c serviceChange) {
	w.queue = append(w.queue, deps.ServiceEvent{Deleted: c.deleted, Service: c.svc.DeepCopy(), ResourceVersion: strconv.FormatUint(c.rv, 10)})
	w.sig.Notify()
}

// Next returns the next event, waiting for one until ctx ends. After an
// error the watch is closed and every later Next fails too.
func (w *serviceWatch) Next(ctx context.Context) (deps.ServiceEvent, error) {
	s := w.s
	for {
		if err := ctx.Err(); err != nil {
			return deps.ServiceEvent{}, fmt.Errorf("watch#%d of services: %w", w.id, err)
		}
		s.mu.Lock()
		switch {
		case w.stopped || w.closed:
			s.mu.Unlock()
			return deps.ServiceEvent{}, fmt.Errorf("watch#%d of services: %w", w.id, errWatchClosed)
		case w.err != nil:
			err := w.err
			w.err, w.closed = nil, true
			w.removeLocked()
			s.mu.Unlock()
			s.log.Info("apiserver: watch broken", "watch", w.id, "resource", "services", "err", err)
			return deps.ServiceEvent{}, err
		case len(w.queue) > 0:
			ev := w.queue[0]
			w.queue = w.queue[1:]
			s.mu.Unlock()
			s.response()
			return ev, nil
		}
		s.mu.Unlock()
		if err := w.sig.Wait(ctx); err != nil {
			return deps.ServiceEvent{}, fmt.Errorf("watch#%d of services: %w", w.id, err)
		}
	}
}

// Stop closes the watch; a Next waiting on it returns an error.
func (w *serviceWatch) Stop() {
	s := w.s
	s.mu.Lock()
	if w.stopped {
		s.mu.Unlock()
		return
	}
	w.stopped, w.queue = true, nil
	w.removeLocked()
	s.mu.Unlock()
	w.sig.Notify()
}

// removeLocked stops delivering changes to w. Caller holds mu.
func (w *serviceWatch) removeLocked() {
	ws := &w.s.svc.watches
	if i := slices.Index(*ws, w); i >= 0 {
		*ws = slices.Delete(*ws, i, i+1)
	}
}

// PutService creates or replaces a service ("default" namespace when
// unset).
func (u *User) PutService(svc *corev1.Service) {
	c := svc.DeepCopy()
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	s := u.s
	s.mu.Lock()
	defer s.unlock()
	rv := s.nextRV()
	c.ResourceVersion = strconv.FormatUint(rv, 10)
	s.objs.services[key(c.Namespace, c.Name)] = c
	s.publishServiceLocked(serviceChange{rv: rv, svc: c})
}

// DeleteService deletes a service; false when there is none of that name.
func (u *User) DeleteService(namespace, name string) bool {
	s := u.s
	s.mu.Lock()
	defer s.unlock()
	old, ok := s.objs.services[key(namespace, name)]
	if !ok {
		return false
	}
	delete(s.objs.services, key(namespace, name))
	rv := s.nextRV()
	gone := old.DeepCopy()
	gone.ResourceVersion = strconv.FormatUint(rv, 10)
	s.publishServiceLocked(serviceChange{rv: rv, deleted: true, svc: gone})
	return true
}

// OpenServiceWatches is how many service watches are open.
func (u *User) OpenServiceWatches() int {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	return len(u.s.svc.watches)
}

// errServiceWatchDropped is the error of a service watch broken by
// DropWatches.
func errServiceWatchDropped() error {
	return fmt.Errorf("watch services: connection dropped: %w", io.ErrUnexpectedEOF)
}

// Service returns a copy of a service, false when there is none.
func (u *User) Service(namespace, name string) (*corev1.Service, bool) {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	svc, ok := u.s.objs.services[key(namespace, name)]
	if !ok {
		return nil, false
	}
	return svc.DeepCopy(), true
}
