package kernel

import (
	"context"
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// tasksView is the kernel seen as deps.Tasks.
type tasksView struct{ k *Kernel }

func (v tasksView) Go(name string, fn func()) { v.k.Go(name, fn) }
func (v tasksView) Sleep(ctx context.Context, d time.Duration) error {
	return v.k.sleep(ctx, d)
}
func (v tasksView) Yield() { v.k.Yield() }
func (v tasksView) WithCancel(parent context.Context) (context.Context, context.CancelFunc) {
	return v.k.WithCancel(parent)
}
func (v tasksView) AfterFunc(name string, d time.Duration, fn func()) deps.Timer {
	return v.k.AfterFunc(name, d, fn)
}
func (v tasksView) NewTicker(name string, period time.Duration) deps.Ticker {
	return v.k.NewTicker(name, period)
}
func (v tasksView) NewSignal(name string) deps.Signal { return v.k.NewSignal(name) }

// SleepCtx blocks the calling task for d of virtual time or until ctx ends.
func (k *Kernel) SleepCtx(ctx context.Context, d time.Duration) error { return k.sleep(ctx, d) }

// signal is the simulator's deps.Signal: one remembered notification and a
// FIFO of waiting tasks.
type signal struct {
	k       *Kernel
	name    string
	pending bool
	waiters waitList
}

// NewSignal returns a signal; name appears in deadlock reports.
func (k *Kernel) NewSignal(name string) deps.Signal {
	return &signal{k: k, name: name, waiters: waitList{ofSignal: true}}
}

func (s *signal) Notify() {
	if t := s.waiters.popFront(); t != nil {
		s.k.wakeTask(t, nil)
		return
	}
	s.pending = true
}

func (s *signal) Wait(ctx context.Context) error {
	k := s.k
	t := k.running("Signal.Wait")
	if s.pending {
		s.pending = false
		k.yield(t)
		return nil
	}
	if err := ctx.Err(); err != nil {
		k.yield(t)
		return err
	}
	sc := k.simContext(ctx)
	s.waiters.push(t)
	if sc != nil {
		sc.waiters.push(t)
	}
	return k.park(t, "signal "+s.name)
}

// ticker is the simulator's deps.Ticker: a timer re-armed at due+period
// after each tick (so ticks never drift) that notifies a signal.
type ticker struct {
	k      *Kernel
	period time.Duration
	sig    *signal
	e      *timerEntry
}

// NewTicker returns a ticker whose first tick is one period from now.
func (k *Kernel) NewTicker(name string, period time.Duration) deps.Ticker {
	if period <= 0 {
		panic("sim: NewTicker with a non-positive period")
	}
	tk := &ticker{k: k, period: period, sig: &signal{k: k, name: "ticker " + name, waiters: waitList{ofSignal: true}}}
	tk.e = &timerEntry{kind: timerTick, tick: tk, index: -1}
	k.arm(tk.e, k.now.Add(period))
	return tk
}

func (tk *ticker) Wait(ctx context.Context) error { return tk.sig.Wait(ctx) }

func (tk *ticker) Reset(period time.Duration) {
	if period <= 0 {
		panic("sim: Ticker.Reset with a non-positive period")
	}
	tk.k.disarm(tk.e)
	tk.period = period
	tk.sig.pending = false
	tk.k.arm(tk.e, tk.k.now.Add(period))
}

func (tk *ticker) Stop() {
	tk.k.disarm(tk.e)
	tk.sig.pending = false
}
