// Package servicecache keeps every service of the cluster for the
// service environment variables, as upstream's service informer does: one
// task lists the services of all namespaces, then watches them for the
// node's lifetime, so building a container's environment costs no
// request. A watch the apiserver closes normally (its timeout) is opened
// again from the last resource version at once; a broken or expired one
// is followed by a new list under back-off, the last state kept
// meanwhile. Until the first list has succeeded the cache is not synced
// (Synced), and non-static pods cannot have their environment built
// (ErrNotSynced).
package servicecache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// ErrNotSynced is the error of an environment asked for before the
// services were listed once (upstream's message).
var ErrNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// SyncWait bounds how long WaitSynced waits for the first list, and
// syncPoll is how often it looks.
const (
	SyncWait = time.Second
	syncPoll = 10 * time.Millisecond
)

// Cache is the watched services' cache (see the package doc).
type Cache struct {
	core  deps.Core // for its fault points
	tasks deps.Tasks
	clock deps.Clock
	rand  deps.Rand
	log   *slog.Logger
	api   deps.ServiceAPI

	mu       sync.Mutex
	synced   bool
	services map[string]map[string]*corev1.Service // by namespace, then name
	rv       string                                // where the next watch resumes; "" lists first
}

// New returns a cache listing and watching through api.
func New(d deps.Core, api deps.ServiceAPI) *Cache {
	return &Cache{core: d, tasks: d.Tasks, clock: d.Clock, rand: d.Rand, log: d.Log.With("component", "service-cache"), api: api,
		services: map[string]map[string]*corev1.Service{}}
}

// Start runs the cache's list-and-watch task until ctx ends.
func (c *Cache) Start(ctx context.Context) {
	c.tasks.Go("service cache", func() { c.run(ctx) })
}

// Synced reports whether the services have been listed at least once.
func (c *Cache) Synced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.synced
}

// WaitSynced waits up to SyncWait for the first list and reports whether
// the cache is synced.
func (c *Cache) WaitSynced(ctx context.Context) bool {
	deadline := c.clock.Now().Add(SyncWait)
	for !c.Synced() {
		if !c.clock.Now().Before(deadline) || c.tasks.Sleep(ctx, syncPoll) != nil {
			return c.Synced()
		}
	}
	return true
}

// Services returns the cached services of the given namespaces, sorted by
// namespace and name. They are shared: callers must not change them.
func (c *Cache) Services(namespaces ...string) []*corev1.Service {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*corev1.Service
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(namespaces))) {
		byName := c.services[ns]
		for _, name := range slices.Sorted(maps.Keys(byName)) {
			out = append(out, byName[name])
		}
	}
	return out
}

// run lists and watches until ctx ends.
func (c *Cache) run(ctx context.Context) {
	retry := backoff.Curve{Initial: 500 * time.Millisecond, Factor: 2, Max: 30 * time.Second, Jitter: 0.1, Rand: c.rand}
	for ctx.Err() == nil {
		err := c.listAndWatch(ctx, &retry)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, io.EOF) {
			continue // closed by the apiserver's timeout: resume at once
		}
		c.mu.Lock()
		c.rv = "" // list again, keeping the last state until then
		c.mu.Unlock()
		c.log.Warn("listing or watching services failed; listing again", "error", err.Error())
		if c.tasks.Sleep(ctx, retry.Next()) != nil {
			return
		}
	}
}

// listAndWatch lists the services when the cache has no resource version
// to resume from, then follows one watch until it ends.
func (c *Cache) listAndWatch(ctx context.Context, retry *backoff.Curve) error {
	c.mu.Lock()
	rv := c.rv
	c.mu.Unlock()
	if rv == "" {
		list, listRV, err := c.api.ListServices(ctx)
		if err != nil {
			return fmt.Errorf("list services: %w", err)
		}
		c.replace(list, listRV)
		retry.Reset()
		rv = listRV
	}
	w, err := c.api.WatchServices(ctx, rv)
	if err != nil {
		return fmt.Errorf("watch services from resource version %q: %w", rv, err)
	}
	defer w.Stop()
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			return fmt.Errorf("watch services: %w", err)
		}
		c.apply(ev)
		if c.core.Fault(deps.FaultServiceWatchClosed) {
			return io.EOF // closed by the apiserver: resumed at once
		}
	}
}

// replace makes a list the cache's whole state.
func (c *Cache) replace(list []*corev1.Service, rv string) {
	services := map[string]map[string]*corev1.Service{}
	for _, svc := range list {
		put(services, svc)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.services, c.rv, c.synced = services, rv, true
}

// apply records one watch event.
func (c *Cache) apply(ev deps.ServiceEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case ev.Service == nil: // bookmark
	case ev.Deleted:
		byName := c.services[ev.Service.Namespace]
		delete(byName, ev.Service.Name)
		if len(byName) == 0 {
			delete(c.services, ev.Service.Namespace)
		}
	default:
		put(c.services, ev.Service)
	}
	if ev.ResourceVersion != "" {
		c.rv = ev.ResourceVersion
	}
}

// put files svc under its namespace and name.
func put(services map[string]map[string]*corev1.Service, svc *corev1.Service) {
	byName := services[svc.Namespace]
	if byName == nil {
		byName = map[string]*corev1.Service{}
		services[svc.Namespace] = byName
	}
	byName[svc.Name] = svc
}
