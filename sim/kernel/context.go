package kernel

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// simCtxKey finds the nearest simulator context through Value.
type simCtxKey struct{}

// simCtx is a context whose cancellation the kernel performs synchronously:
// cancelling it wakes the tasks waiting on it in FIFO order, at once, so
// the run stays deterministic. (A standard library context would wake them
// from a goroutine of its own, at a moment nobody chooses.)
type simCtx struct {
	k           *Kernel
	parent      context.Context
	parentSim   *simCtx
	deadline    time.Time
	hasDeadline bool
	done        chan struct{}
	err         error
	children    []*simCtx
	afterFuncs  []*afterFunc
	waiters     waitList
	timer       *timerEntry
}

type afterFunc struct{ f func() }

func (c *simCtx) Deadline() (time.Time, bool) { return c.deadline, c.hasDeadline }
func (c *simCtx) Done() <-chan struct{}       { return c.done }
func (c *simCtx) Err() error                  { return c.err }
func (c *simCtx) Value(key any) any {
	if _, ok := key.(simCtxKey); ok {
		return c
	}
	return c.parent.Value(key)
}
func (c *simCtx) String() string {
	if c.hasDeadline {
		return fmt.Sprintf("sim.WithDeadline(%v)", c.deadline.Sub(c.k.epoch))
	}
	return "sim.WithCancel"
}

// AfterFunc lets the standard library attach its own child contexts
// (context.WithCancel of a simulator context) synchronously.
func (c *simCtx) AfterFunc(f func()) (stop func() bool) {
	if c.err != nil {
		f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	c.afterFuncs = append(c.afterFuncs, a)
	return func() bool {
		i := slices.Index(c.afterFuncs, a)
		if i < 0 {
			return false
		}
		c.afterFuncs = slices.Delete(c.afterFuncs, i, i+1)
		return true
	}
}

func (c *simCtx) cancel(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	close(c.done)
	if c.timer != nil {
		c.k.disarm(c.timer)
	}
	for t := c.waiters.popFront(); t != nil; t = c.waiters.popFront() {
		c.k.wakeTask(t, err)
	}
	children := c.children
	c.children = nil
	for _, ch := range children {
		ch.cancel(err)
	}
	fs := c.afterFuncs
	c.afterFuncs = nil
	for _, a := range fs {
		a.f()
	}
	if p := c.parentSim; p != nil {
		if i := slices.Index(p.children, c); i >= 0 {
			p.children = slices.Delete(p.children, i, i+1)
		}
	}
}

// simContext returns the simulator context behind ctx, nil if ctx can never
// be cancelled, and panics on a cancellable context the simulator did not
// make: its cancellation could not be scheduled deterministically.
func (k *Kernel) simContext(ctx context.Context) *simCtx {
	done := ctx.Done()
	if done == nil {
		return nil
	}
	sc, _ := ctx.Value(simCtxKey{}).(*simCtx)
	if sc == nil || sc.done != done {
		panic(fmt.Sprintf("sim: a task waits on a context the simulator did not make (%v); "+
			"use deps.Tasks.WithCancel or deps.Clock.WithTimeout/WithDeadline", ctx))
	}
	return sc
}

func (k *Kernel) newCtx(parent context.Context, deadline time.Time, hasDeadline bool) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic("sim: nil parent context")
	}
	c := &simCtx{k: k, parent: parent, done: make(chan struct{})}
	if pd, ok := parent.Deadline(); ok && (!hasDeadline || pd.Before(deadline)) {
		deadline, hasDeadline = pd, true
	}
	c.deadline, c.hasDeadline = deadline, hasDeadline
	if p := k.simContext(parent); p != nil {
		if p.err != nil {
			c.cancel(p.err)
			return c, func() {}
		}
		c.parentSim = p
		p.children = append(p.children, c)
	}
	if hasDeadline {
		if !deadline.After(k.now) {
			c.cancel(context.DeadlineExceeded)
		} else {
			c.timer = &timerEntry{kind: timerDeadline, ctx: c, index: -1}
			k.arm(c.timer, deadline)
		}
	}
	return c, func() { c.cancel(context.Canceled) }
}

// WithCancel returns a cancellable child of parent whose cancellation the
// kernel schedules deterministically.
func (k *Kernel) WithCancel(parent context.Context) (context.Context, context.CancelFunc) {
	return k.newCtx(parent, time.Time{}, false)
}

// WithDeadline returns a child of parent cancelled at virtual time d.
func (k *Kernel) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return k.newCtx(parent, d, true)
}

// WithTimeout returns a child of parent cancelled after t of virtual time.
func (k *Kernel) WithTimeout(parent context.Context, t time.Duration) (context.Context, context.CancelFunc) {
	return k.newCtx(parent, k.now.Add(t), true)
}
