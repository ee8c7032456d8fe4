package kernel

import (
	"container/heap"
	"context"
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/trace"
)

type timerKind int

const (
	timerWake     timerKind = iota // wake a sleeping task
	timerFunc                      // start a delayed task
	timerTick                      // deliver a ticker's tick
	timerDeadline                  // cancel a context at its deadline
)

// timerEntry is one pending timer. Timers fire in (due, seq) order, seq
// being the order in which they were armed.
type timerEntry struct {
	due   time.Duration // virtual time since the epoch
	seq   uint64
	index int
	kind  timerKind
	task  *task
	name  string
	fn    func()
	tick  *ticker
	ctx   *simCtx
	group *Group
}

type timerHeap []*timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].due != h[j].due {
		return h[i].due < h[j].due
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	e := x.(*timerEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}

// arm schedules e at due.
func (k *Kernel) arm(e *timerEntry, at time.Time) {
	due := at.Sub(k.epoch)
	if now := k.Elapsed(); due < now {
		due = now
	}
	k.seq++
	e.due, e.seq = due, k.seq
	heap.Push(&k.timers, e)
}

// disarm removes e if it is pending and reports whether it was.
func (k *Kernel) disarm(e *timerEntry) bool {
	if e.index < 0 {
		return false
	}
	heap.Remove(&k.timers, e.index)
	return true
}

func (k *Kernel) fire(e *timerEntry) {
	switch e.kind {
	case timerWake:
		e.task.timer = nil
		k.wakeTask(e.task, nil)
	case timerFunc:
		k.spawn(e.name, e.fn, e.group)
	case timerTick:
		e.tick.sig.Notify()
		k.arm(e, k.epoch.Add(e.due+e.tick.period))
	case timerDeadline:
		e.ctx.cancel(context.DeadlineExceeded)
	}
}

// Now is the virtual time.
func (k *Kernel) Now() time.Time { return k.now }

// Since is the virtual time elapsed since t.
func (k *Kernel) Since(t time.Time) time.Duration { return k.now.Sub(t) }

// Until is the virtual time left until t.
func (k *Kernel) Until(t time.Time) time.Duration { return t.Sub(k.now) }

// Sleep blocks the calling task for d of virtual time; d <= 0 yields.
func (k *Kernel) Sleep(d time.Duration) { _ = k.sleep(context.Background(), d) }

// sleep blocks the calling task for d of virtual time or until ctx ends.
func (k *Kernel) sleep(ctx context.Context, d time.Duration) error {
	t := k.running("Sleep")
	if err := ctx.Err(); err != nil {
		k.yield(t)
		return err
	}
	if d <= 0 {
		k.yield(t)
		return ctx.Err()
	}
	sc := k.simContext(ctx)
	e := &t.sleepTimer
	*e = timerEntry{kind: timerWake, task: t, index: -1}
	k.arm(e, k.now.Add(d))
	t.timer = e
	if sc != nil {
		sc.waiters.push(t)
	}
	return k.park(t, "sleep")
}

// Yield lets the other ready tasks run before the caller goes on.
func (k *Kernel) Yield() { k.yield(k.running("Yield")) }

func (k *Kernel) yield(t *task) {
	t.state = stateReady
	k.ready = append(k.ready, t)
	k.switchFrom(t)
}

// AfterFunc starts fn as a task named name after d of virtual time.
func (k *Kernel) AfterFunc(name string, d time.Duration, fn func()) deps.Timer {
	return k.afterFunc(name, d, fn, k.currentGroup())
}

func (k *Kernel) afterFunc(name string, d time.Duration, fn func(), g *Group) deps.Timer {
	e := &timerEntry{kind: timerFunc, name: name, fn: fn, index: -1, group: g}
	k.arm(e, k.now.Add(d))
	k.Record("timer", trace.Field{Key: "name", Value: name}, trace.F("after", d))
	return &simTimer{k: k, e: e}
}

type simTimer struct {
	k *Kernel
	e *timerEntry
}

func (t *simTimer) Stop() bool { return t.k.disarm(t.e) }

func (t *simTimer) Reset(d time.Duration) bool {
	pending := t.k.disarm(t.e)
	t.k.arm(t.e, t.k.now.Add(d))
	return pending
}

func fieldTask(name string) trace.Field { return trace.Field{Key: "child", Value: name} }
