package images

import (
	"context"
	"slices"
	"sync"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Gate bounds how many pulls run at once and admits the waiting ones in
// the order they came: the kubelet's serialized puller (a limit of 1) and
// its parallel puller (maxParallelImagePulls), on deps.Tasks signals.
type Gate struct {
	tasks deps.Tasks
	limit int // <= 0: no limit

	mu      sync.Mutex
	running int
	waiters []*gateWaiter
}

type gateWaiter struct {
	wake    deps.Signal
	granted bool
}

// NewGate returns a gate letting limit pulls through at once; limit <= 0
// lets every pull through.
func NewGate(tasks deps.Tasks, limit int) *Gate {
	return &Gate{tasks: tasks, limit: limit}
}

// Acquire waits for a slot, behind those already waiting; it returns
// ctx.Err() when ctx ends first. A nil error must be paired with Release.
func (g *Gate) Acquire(ctx context.Context) error {
	if g.limit <= 0 {
		return nil
	}
	g.mu.Lock()
	if g.running < g.limit && len(g.waiters) == 0 {
		g.running++
		g.mu.Unlock()
		return nil
	}
	w := &gateWaiter{wake: g.tasks.NewSignal("image pull slot")}
	g.waiters = append(g.waiters, w)
	g.mu.Unlock()
	for {
		err := w.wake.Wait(ctx)
		g.mu.Lock()
		if w.granted {
			g.mu.Unlock()
			return nil
		}
		if err != nil {
			g.waiters = slices.DeleteFunc(g.waiters, func(o *gateWaiter) bool { return o == w })
			g.mu.Unlock()
			return err
		}
		g.mu.Unlock()
	}
}

// Release frees a slot, handing it to the longest waiting pull if any.
func (g *Gate) Release() {
	if g.limit <= 0 {
		return
	}
	g.mu.Lock()
	if len(g.waiters) == 0 {
		g.running--
		g.mu.Unlock()
		return
	}
	w := g.waiters[0]
	g.waiters = g.waiters[1:]
	w.granted = true
	g.mu.Unlock()
	w.wake.Notify()
}

// Waiting reports how many pulls wait for a slot.
func (g *Gate) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiters)
}
