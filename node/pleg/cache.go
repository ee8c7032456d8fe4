package pleg

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

// Cache is the runtime's view of every pod, as the PLEG last read it.
// Statuses it returns are shared: callers must not modify them.
type Cache interface {
	// Get returns the latest status held for uid, whatever its age, and
	// whether there is one (false, with nil, when the runtime held nothing
	// for uid at the last look).
	Get(uid types.UID) (*podstate.PodStatus, bool)
	// UIDs lists, sorted, the pods the cache holds a status for (the pods
	// the runtime held objects of at the last look), for orphan cleanup.
	UIDs() []types.UID
	// GetNewerThan blocks until the cache holds a status of uid whose
	// timestamp is after minTime — either the pod's own entry is newer, or
	// the global timestamp (set after a complete relist, meaning every
	// entry is at least that fresh) is — or until ctx ends. For a pod the
	// runtime does not know it returns an empty PodStatus{UID: uid,
	// Timestamp: global} once the global timestamp passes minTime.
	GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*podstate.PodStatus, error)
}

// waiter is a GetNewerThan call waiting for a status newer than min.
type waiter struct {
	sig        deps.Signal
	min        time.Time
	registered bool
}

// podCache implements Cache. Entries only move forward in time: a status
// older than the one held is dropped, so a slow relist cannot undo a newer
// RefreshPod.
type podCache struct {
	tasks  deps.Tasks
	onMiss func(ctx context.Context, uid types.UID, minTime time.Time)

	mu sync.Mutex
	// entries holds each pod's latest status. An entry without sandboxes
	// or containers is a tombstone: the runtime held nothing for the pod at
	// its timestamp. Tombstones are dropped once the global timestamp
	// reaches them.
	entries map[types.UID]*podstate.PodStatus
	tombs   map[types.UID]struct{}
	// stale lists the pods whose latest refresh failed: the global
	// timestamp does not vouch for them, only their own entries do.
	stale   map[types.UID]struct{}
	global  time.Time
	waiters map[types.UID][]*waiter
}

func newPodCache(tasks deps.Tasks, onMiss func(context.Context, types.UID, time.Time)) *podCache {
	return &podCache{
		tasks:   tasks,
		onMiss:  onMiss,
		entries: map[types.UID]*podstate.PodStatus{},
		tombs:   map[types.UID]struct{}{},
		stale:   map[types.UID]struct{}{},
		waiters: map[types.UID][]*waiter{},
	}
}

// Get implements Cache.
func (c *podCache) Get(uid types.UID) (*podstate.PodStatus, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, tomb := c.tombs[uid]; tomb {
		return nil, false
	}
	st, ok := c.entries[uid]
	return st, ok
}

// UIDs implements Cache.
func (c *podCache) UIDs() []types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]types.UID, 0, len(c.entries)-len(c.tombs))
	for uid := range c.entries {
		if _, tomb := c.tombs[uid]; !tomb {
			out = append(out, uid)
		}
	}
	slices.Sort(out)
	return out
}

// GetNewerThan implements Cache. Before its first wait it gives the
// onMiss hook one chance to refresh the pod.
func (c *podCache) GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*podstate.PodStatus, error) {
	var w *waiter
	missed := false
	for {
		c.mu.Lock()
		if st, ok := c.newerLocked(uid, minTime); ok {
			c.unregisterLocked(uid, w)
			c.mu.Unlock()
			return st, nil
		}
		if w == nil {
			w = &waiter{sig: c.tasks.NewSignal("pleg-cache " + string(uid)), min: minTime}
		}
		if !w.registered {
			w.registered = true
			c.waiters[uid] = append(c.waiters[uid], w)
		}
		c.mu.Unlock()
		if !missed && c.onMiss != nil {
			missed = true
			c.onMiss(ctx, uid, minTime)
			continue
		}
		if err := w.sig.Wait(ctx); err != nil {
			c.mu.Lock()
			c.unregisterLocked(uid, w)
			c.mu.Unlock()
			return nil, fmt.Errorf("wait for a status of pod %s newer than %v: %w", uid, minTime, err)
		}
	}
}

// newerLocked is the "newer than" rule.
func (c *podCache) newerLocked(uid types.UID, minTime time.Time) (*podstate.PodStatus, bool) {
	e := c.entries[uid]
	if e != nil && e.Timestamp.After(minTime) {
		return e, true
	}
	if _, stale := c.stale[uid]; stale || !c.global.After(minTime) {
		return nil, false
	}
	if e != nil {
		return e, true
	}
	return &podstate.PodStatus{UID: uid, Timestamp: c.global}, true
}

func (c *podCache) unregisterLocked(uid types.UID, w *waiter) {
	if w == nil || !w.registered {
		return
	}
	w.registered = false
	ws := slices.DeleteFunc(c.waiters[uid], func(x *waiter) bool { return x == w })
	if len(ws) == 0 {
		delete(c.waiters, uid)
	} else {
		c.waiters[uid] = ws
	}
}

// wakeLocked wakes uid's waiters whose wait is over, in arrival order.
func (c *podCache) wakeLocked(uid types.UID) {
	ws := c.waiters[uid]
	if len(ws) == 0 {
		return
	}
	kept := ws[:0]
	for _, w := range ws {
		if _, ok := c.newerLocked(uid, w.min); ok {
			w.registered = false
			w.sig.Notify()
			continue
		}
		kept = append(kept, w)
	}
	clear(ws[len(kept):])
	if len(kept) == 0 {
		delete(c.waiters, uid)
	} else {
		c.waiters[uid] = kept
	}
}

// set stores st unless the cache holds a newer status of the pod. A status
// at least as new as the global timestamp is no longer stale.
func (c *podCache) set(st *podstate.PodStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[st.UID]; e != nil && st.Timestamp.Before(e.Timestamp) {
		return
	}
	c.entries[st.UID] = st
	if len(st.Sandboxes) == 0 && len(st.Containers) == 0 {
		c.tombs[st.UID] = struct{}{}
	} else {
		delete(c.tombs, st.UID)
	}
	if !st.Timestamp.Before(c.global) {
		delete(c.stale, st.UID)
	}
	c.wakeLocked(st.UID)
}

// markStale records that a refresh of uid at ts failed, unless the cache
// already holds a status at least that new.
func (c *podCache) markStale(uid types.UID, ts time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[uid]; e == nil || e.Timestamp.Before(ts) {
		c.stale[uid] = struct{}{}
	}
}

// setGlobal records that every entry not marked stale is accurate as of
// ts, drops the tombstones that says nothing new about, and wakes the
// waiters whose wait is over, by pod UID.
func (c *podCache) setGlobal(ts time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ts.After(c.global) {
		return
	}
	c.global = ts
	for uid := range c.tombs {
		if !c.entries[uid].Timestamp.After(ts) {
			delete(c.entries, uid)
			delete(c.tombs, uid)
		}
	}
	if len(c.waiters) == 0 {
		return
	}
	uids := make([]types.UID, 0, len(c.waiters))
	for uid := range c.waiters {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	for _, uid := range uids {
		c.wakeLocked(uid)
	}
}
