// Package objcache keeps the ConfigMaps and Secrets that the node's pods
// reference (volumes, env and envFrom) fresh through single-object
// watches, as upstream's Watch change-detection strategy does: one watch
// task per object, reference-counted by pod (Acquire when the pod is
// desired, Release once it has terminated), stopped with the last pod that
// references it. A broken watch is opened again under back-off and its
// last state kept meanwhile. The volume manager publishes from it and the
// runtime sync builds containers' environments from it, so a referenced
// object costs one LIST+WATCH, not a GET per volume refresh or per
// container; readers fall back to a GET only while a watch has not
// reported yet (WaitConfigMap/WaitSecret wait up to SyncWait for it, as
// upstream's cache waits for its reflector).
package objcache

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
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/volume/plugin"
)

// SyncWait bounds how long WaitConfigMap and WaitSecret wait for a new
// watch's first report (upstream: 1 s), and syncPoll is how often they
// look.
const (
	SyncWait = time.Second
	syncPoll = 10 * time.Millisecond
)

// objKey names a configMap or secret of a namespace.
type objKey struct {
	secret          bool
	namespace, name string
}

func (k objKey) String() string {
	kind := "configmap"
	if k.secret {
		kind = "secret"
	}
	return fmt.Sprintf("%s %s/%s", kind, k.namespace, k.name)
}

// cacheEntry is what the cache holds of one watched object.
type cacheEntry struct {
	refs    int
	cancel  context.CancelFunc
	synced  bool // a watch reported the object's state at least once
	cm      *corev1.ConfigMap
	sec     *corev1.Secret
	changed time.Time // when the watch last reported a new state
}

// Cache is the watched objects' cache (see the package doc).
type Cache struct {
	core  deps.Core // for its fault points
	tasks deps.Tasks
	clock deps.Clock
	rand  deps.Rand
	log   *slog.Logger
	api   deps.ObjectWatchAPI

	mu       sync.Mutex
	onChange []func()
	ctx      context.Context // Start's; nil before Start
	entries  map[objKey]*cacheEntry
	podRefs  map[types.UID][]objKey
}

// New returns a cache watching through api; with a nil api it holds
// nothing and every read misses (readers GET).
func New(d deps.Core, api deps.ObjectWatchAPI) *Cache {
	return &Cache{core: d, tasks: d.Tasks, clock: d.Clock, rand: d.Rand, log: d.Log.With("component", "object-cache"), api: api,
		entries: map[objKey]*cacheEntry{}, podRefs: map[types.UID][]objKey{}}
}

// OnChange registers fn to be called (outside the cache's lock) each time
// a watch reports a new state of an object.
func (c *Cache) OnChange(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onChange = append(c.onChange, fn)
}

// Start lets the cache open watches, living until ctx ends, and opens
// those of the pods acquired before.
func (c *Cache) Start(ctx context.Context) {
	c.mu.Lock()
	c.ctx = ctx
	keys := slices.SortedFunc(maps.Keys(c.entries), compareKeys)
	c.mu.Unlock()
	for _, k := range keys {
		c.startWatch(k)
	}
}

func compareKeys(a, b objKey) int {
	switch {
	case a.String() < b.String():
		return -1
	case a.String() > b.String():
		return 1
	}
	return 0
}

// Acquire takes a reference on every object pod reads (its volumes' and
// its containers' environments'), opening the watches of new ones. A pod
// acquired already keeps its references (a pod's references never
// change: volumes and env are immutable).
func (c *Cache) Acquire(pod *corev1.Pod) {
	if c.api == nil {
		return
	}
	keys := podKeys(pod)
	var fresh []objKey
	c.mu.Lock()
	if _, had := c.podRefs[pod.UID]; had {
		c.mu.Unlock()
		return
	}
	c.podRefs[pod.UID] = keys
	for _, k := range keys {
		e := c.entries[k]
		if e == nil {
			e = &cacheEntry{}
			c.entries[k] = e
			fresh = append(fresh, k)
		}
		e.refs++
	}
	c.mu.Unlock()
	for _, k := range fresh {
		c.startWatch(k)
	}
}

// podKeys lists the objects a pod reads, sorted, without duplicates.
func podKeys(pod *corev1.Pod) []objKey {
	var keys []objKey
	add := func(cms, secs []string) {
		for _, n := range cms {
			keys = append(keys, objKey{namespace: pod.Namespace, name: n})
		}
		for _, n := range secs {
			keys = append(keys, objKey{secret: true, namespace: pod.Namespace, name: n})
		}
	}
	for i := range pod.Spec.Volumes {
		add(plugin.References(&pod.Spec.Volumes[i]))
	}
	for i := range pod.Spec.InitContainers {
		add(podspec.EnvSources(&pod.Spec.InitContainers[i]))
	}
	for i := range pod.Spec.Containers {
		add(podspec.EnvSources(&pod.Spec.Containers[i]))
	}
	slices.SortFunc(keys, compareKeys)
	return slices.Compact(keys)
}

// Release drops a pod's references; an object no pod references any more
// is no longer watched.
func (c *Cache) Release(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.podRefs[uid] {
		e := c.entries[k]
		if e == nil {
			continue
		}
		if e.refs--; e.refs <= 0 {
			if e.cancel != nil {
				e.cancel()
			}
			delete(c.entries, k)
		}
	}
	delete(c.podRefs, uid)
}

// startWatch runs the watch task of k once the cache has started.
func (c *Cache) startWatch(k objKey) {
	c.mu.Lock()
	e := c.entries[k]
	if c.ctx == nil || e == nil || e.cancel != nil {
		c.mu.Unlock()
		return
	}
	ctx, cancel := c.tasks.WithCancel(c.ctx)
	e.cancel = cancel
	c.mu.Unlock()
	c.tasks.Go("watch "+k.String(), func() { c.watch(ctx, k) })
}

// watch keeps k's entry fresh until ctx ends.
func (c *Cache) watch(ctx context.Context, k objKey) {
	retry := backoff.Curve{Initial: 500 * time.Millisecond, Factor: 2, Max: 30 * time.Second, Jitter: 0.1, Rand: c.rand}
	for ctx.Err() == nil {
		err := c.follow(ctx, k, &retry)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, io.EOF) {
			continue // closed by the apiserver's timeout: watch again at once
		}
		c.log.Warn("watching a referenced object failed; retrying", "object", k.String(), "error", err.Error())
		if c.tasks.Sleep(ctx, retry.Next()) != nil {
			return
		}
	}
}

// follow opens one watch of k and records what it reports until it breaks.
func (c *Cache) follow(ctx context.Context, k objKey, retry *backoff.Curve) error {
	if k.secret {
		w, err := c.api.WatchSecret(ctx, k.namespace, k.name)
		if err != nil {
			return err
		}
		defer w.Stop()
		for {
			sec, err := w.Next(ctx)
			if err != nil {
				return err
			}
			retry.Reset()
			c.store(k, func(e *cacheEntry) { e.sec = sec })
			if c.core.Fault(deps.FaultObjectWatchClosed) {
				return io.EOF
			}
		}
	}
	w, err := c.api.WatchConfigMap(ctx, k.namespace, k.name)
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		cm, err := w.Next(ctx)
		if err != nil {
			return err
		}
		retry.Reset()
		c.store(k, func(e *cacheEntry) { e.cm = cm })
		if c.core.Fault(deps.FaultObjectWatchClosed) {
			return io.EOF
		}
	}
}

func (c *Cache) store(k objKey, set func(*cacheEntry)) {
	c.mu.Lock()
	e := c.entries[k]
	if e == nil {
		c.mu.Unlock()
		return // released meanwhile
	}
	set(e)
	e.synced, e.changed = true, c.clock.Now()
	listeners := slices.Clone(c.onChange)
	c.mu.Unlock()
	for _, fn := range listeners {
		fn()
	}
}

// ConfigMap returns the cached configMap (nil: it does not exist) and
// whether the cache has it.
func (c *Cache) ConfigMap(namespace, name string) (*corev1.ConfigMap, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[objKey{namespace: namespace, name: name}]
	if e == nil || !e.synced {
		return nil, false
	}
	return e.cm, true
}

// Secret returns the cached secret (nil: it does not exist) and whether
// the cache has it.
func (c *Cache) Secret(namespace, name string) (*corev1.Secret, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[objKey{secret: true, namespace: namespace, name: name}]
	if e == nil || !e.synced {
		return nil, false
	}
	return e.sec, true
}

// ChangedSince reports whether an object volume v of a pod in namespace
// reads has changed after t.
func (c *Cache) ChangedSince(namespace string, v *corev1.Volume, t time.Time) bool {
	cms, secs := plugin.References(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range cms {
		if e := c.entries[objKey{namespace: namespace, name: n}]; e != nil && e.changed.After(t) {
			return true
		}
	}
	for _, n := range secs {
		if e := c.entries[objKey{secret: true, namespace: namespace, name: n}]; e != nil && e.changed.After(t) {
			return true
		}
	}
	return false
}

// WaitConfigMap returns the cached configMap like ConfigMap, waiting up
// to SyncWait for the first report of a watch the cache holds; false
// when the object is not watched or its watch has not reported in time.
func (c *Cache) WaitConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, bool) {
	k := objKey{namespace: namespace, name: name}
	if !c.waitSynced(ctx, k) {
		return nil, false
	}
	return c.ConfigMap(namespace, name)
}

// WaitSecret is WaitConfigMap for a secret.
func (c *Cache) WaitSecret(ctx context.Context, namespace, name string) (*corev1.Secret, bool) {
	k := objKey{secret: true, namespace: namespace, name: name}
	if !c.waitSynced(ctx, k) {
		return nil, false
	}
	return c.Secret(namespace, name)
}

// waitSynced polls until k's watch has reported, at most SyncWait; false
// at once when k is not watched.
func (c *Cache) waitSynced(ctx context.Context, k objKey) bool {
	deadline := c.clock.Now().Add(SyncWait)
	for {
		c.mu.Lock()
		e := c.entries[k]
		watched, synced := e != nil && c.ctx != nil, e != nil && e.synced
		c.mu.Unlock()
		switch {
		case synced:
			return true
		case !watched, !c.clock.Now().Before(deadline):
			return false
		}
		if c.tasks.Sleep(ctx, syncPoll) != nil {
			return false
		}
	}
}
