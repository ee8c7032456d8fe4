package volume

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

// objectCache keeps the configMaps and secrets that the desired pods'
// volumes reference fresh through single-object watches (upstream's
// default Watch change-detection strategy): one watch task per object,
// reference-counted by pod, stopped with the last pod that references it.
// A broken watch is opened again under back-off and its last state kept
// meanwhile. Before a watch has reported, readers fall back to a GET.
type objectCache struct {
	tasks   deps.Tasks
	clock   deps.Clock
	rand    deps.Rand
	log     *slog.Logger
	api     deps.ObjectWatchAPI
	changed func() // wakes the reconciler

	mu      sync.Mutex
	ctx     context.Context // the manager's; nil before Start
	entries map[objKey]*cacheEntry
	podRefs map[types.UID][]objKey
}

// start lets the cache open watches, living until ctx ends, and opens
// those of the pods added before.
func (c *objectCache) start(ctx context.Context) {
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

// acquire takes a reference on every object pod's volumes read, opening
// the watches of new ones.
func (c *objectCache) acquire(pod *corev1.Pod) {
	if c.api == nil {
		return
	}
	var keys []objKey
	for i := range pod.Spec.Volumes {
		cms, secs := referenced(&pod.Spec.Volumes[i])
		for _, n := range cms {
			keys = append(keys, objKey{namespace: pod.Namespace, name: n})
		}
		for _, n := range secs {
			keys = append(keys, objKey{secret: true, namespace: pod.Namespace, name: n})
		}
	}
	slices.SortFunc(keys, compareKeys)
	keys = slices.Compact(keys)
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

// release drops a pod's references; an object no pod references any more
// is no longer watched.
func (c *objectCache) release(uid types.UID) {
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
func (c *objectCache) startWatch(k objKey) {
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
func (c *objectCache) watch(ctx context.Context, k objKey) {
	retry := backoff.Curve{Initial: 500 * time.Millisecond, Factor: 2, Max: 30 * time.Second, Jitter: 0.1, Rand: c.rand}
	for ctx.Err() == nil {
		err := c.follow(ctx, k, &retry)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, io.EOF) {
			continue // closed by the apiserver's timeout: watch again at once
		}
		c.log.Warn("watching an object of a volume failed; retrying", "object", k.String(), "error", err.Error())
		if c.tasks.Sleep(ctx, retry.Next()) != nil {
			return
		}
	}
}

// follow opens one watch of k and records what it reports until it breaks.
func (c *objectCache) follow(ctx context.Context, k objKey, retry *backoff.Curve) error {
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
	}
}

func (c *objectCache) store(k objKey, set func(*cacheEntry)) {
	c.mu.Lock()
	e := c.entries[k]
	if e == nil {
		c.mu.Unlock()
		return // released meanwhile
	}
	set(e)
	e.synced, e.changed = true, c.clock.Now()
	c.mu.Unlock()
	c.changed()
}

// configMap returns the cached configMap (nil: it does not exist) and
// whether the cache has it.
func (c *objectCache) configMap(namespace, name string) (*corev1.ConfigMap, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[objKey{namespace: namespace, name: name}]
	if e == nil || !e.synced {
		return nil, false
	}
	return e.cm, true
}

// secret returns the cached secret (nil: it does not exist) and whether
// the cache has it.
func (c *objectCache) secret(namespace, name string) (*corev1.Secret, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[objKey{secret: true, namespace: namespace, name: name}]
	if e == nil || !e.synced {
		return nil, false
	}
	return e.sec, true
}

// changedSince reports whether an object volume v of a pod in namespace
// reads has changed after t.
func (c *objectCache) changedSince(namespace string, v *corev1.Volume, t time.Time) bool {
	cms, secs := referenced(v)
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
