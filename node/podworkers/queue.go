package podworkers

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// WorkQueue holds the time at which each pod is due for its next sync.
type WorkQueue struct {
	clock deps.Clock
	mu    sync.Mutex
	due   map[types.UID]time.Time
}

// NewWorkQueue returns an empty queue on clock.
func NewWorkQueue(clock deps.Clock) *WorkQueue {
	return &WorkQueue{clock: clock, due: map[types.UID]time.Time{}}
}

// Enqueue makes uid due after delay; an earlier due time is kept.
func (q *WorkQueue) Enqueue(uid types.UID, delay time.Duration) {
	at := q.clock.Now().Add(delay)
	q.mu.Lock()
	defer q.mu.Unlock()
	if old, ok := q.due[uid]; !ok || at.Before(old) {
		q.due[uid] = at
	}
}

// GetDue removes and returns the pods due by now, earliest first (ties by
// UID, so the order is deterministic).
func (q *WorkQueue) GetDue() []types.UID {
	now := q.clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	type item struct {
		uid types.UID
		at  time.Time
	}
	var items []item
	for uid, at := range q.due {
		if !at.After(now) {
			items = append(items, item{uid, at})
		}
	}
	slices.SortFunc(items, func(a, b item) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.uid, b.uid)
	})
	out := make([]types.UID, len(items))
	for i, it := range items {
		out[i] = it.uid
		delete(q.due, it.uid)
	}
	return out
}

// Len is the number of pods queued.
func (q *WorkQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.due)
}
