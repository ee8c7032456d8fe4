// Package kernel is the simulator's deterministic core: a scheduler that runs
// at most one task at a time and picks the next one from a choice source at
// every scheduling point, a virtual clock whose time only moves when no task
// is ready, and the timer, ticker, signal and context primitives the agent
// reaches through deps.Tasks and deps.Clock. It never reads the wall clock.
//
// Tasks are goroutines that hand a baton to each other: a task runs until it
// makes a blocking call, then picks its successor itself and parks. Because
// every hand-off is a channel operation, the race detector sees a
// happens-before edge between consecutive tasks, and because the successor is
// chosen only from the seeded source, the same seed gives the same run,
// whatever GOMAXPROCS is.
package kernel

import (
	"container/heap"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/choice"
	"github.com/lockstep-dev/lockstep/sim/trace"
)

// DefaultEpoch is the virtual time at which simulations start unless told
// otherwise.
var DefaultEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Config sets up a kernel.
type Config struct {
	// Seed identifies the run; it seeds Choices unless Choices is set.
	Seed uint64
	// Choices decides every scheduling choice and random draw. Default:
	// choice.NewSeeded(Seed).
	Choices choice.Source
	// Epoch is the virtual time at the start. Default: DefaultEpoch.
	Epoch time.Time
	// Trace receives the trace as JSON lines; nil keeps only the hash.
	Trace io.Writer
	// MaxSteps fails the run once this many scheduling steps were taken
	// (0: 100 million).
	MaxSteps uint64
	// MaxTime fails the run if virtual time would pass Epoch+MaxTime
	// (0: no limit).
	MaxTime time.Duration
	// Replay formats the command that replays this run, ending every
	// failure report. Default: "go run ./cmd/lockstep sim kernel-demo --seed N"
	// (right only for the demo workload; harness.New sets its own).
	Replay func(seed uint64) string
}

// Kernel is one deterministic simulated world's scheduler and clock.
// It implements deps.Clock; Tasks returns its deps.Tasks.
type Kernel struct {
	cfg     Config
	choices choice.Source
	rec     *trace.Recorder

	epoch, now time.Time
	seq        uint64
	timers     timerHeap

	nextID  uint64
	ready   []*task
	live    map[uint64]*task
	current *task
	steps   uint64

	until     time.Time
	idleOK    bool
	cond      func() bool
	failure   *Failure
	stopping  bool
	closed    bool
	driverRun chan struct{}
}

var (
	_ deps.Clock = (*Kernel)(nil)
	_ deps.Tasks = tasksView{}
)

// Tasks returns the deps.Tasks face of the kernel. (The Kernel itself is the
// deps.Clock: both have a Sleep, with different signatures.)
func (k *Kernel) Tasks() deps.Tasks { return tasksView{k} }

// New returns a kernel at virtual time cfg.Epoch with no tasks.
func New(cfg Config) *Kernel {
	if cfg.Choices == nil {
		cfg.Choices = choice.NewSeeded(cfg.Seed)
	}
	if cfg.Epoch.IsZero() {
		cfg.Epoch = DefaultEpoch
	}
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = 100_000_000
	}
	if cfg.Replay == nil {
		cfg.Replay = func(seed uint64) string {
			return fmt.Sprintf("go run ./cmd/lockstep sim kernel-demo --seed %d", seed)
		}
	}
	return &Kernel{
		cfg:       cfg,
		choices:   cfg.Choices,
		rec:       trace.NewRecorder(cfg.Trace),
		epoch:     cfg.Epoch,
		now:       cfg.Epoch,
		live:      map[uint64]*task{},
		driverRun: make(chan struct{}, 1),
	}
}

// Seed is the run's seed.
func (k *Kernel) Seed() uint64 { return k.cfg.Seed }

// Elapsed is the virtual time since the start.
func (k *Kernel) Elapsed() time.Duration { return k.now.Sub(k.epoch) }

// Steps is the number of scheduling steps taken so far.
func (k *Kernel) Steps() uint64 { return k.steps }

// Trace is the run's trace recorder (its Hash is the fingerprint).
func (k *Kernel) Trace() *trace.Recorder { return k.rec }

// Record adds an event to the trace on behalf of the running task (or of
// the driver, between runs).
func (k *Kernel) Record(kind string, fields ...trace.Field) {
	k.rec.Record(k.Elapsed(), k.currentName(), kind, fields...)
}

// Rand returns the agent's randomness, drawn from the choice source.
func (k *Kernel) Rand() deps.Rand { return kernelRand{k} }

type kernelRand struct{ k *Kernel }

func (r kernelRand) IntN(n int) int {
	if n <= 0 {
		panic("sim: IntN with n <= 0")
	}
	return r.k.choices.IntN(n)
}

// Logger returns a structured logger that writes "log" events to the trace,
// stamped with virtual time and the running task.
func (k *Kernel) Logger() *slog.Logger { return slog.New(&logHandler{k: k}) }

// Failure returns the failure that stopped the run, if any.
func (k *Kernel) Failure() *Failure { return k.failure }

// Live is the number of tasks that have not finished.
func (k *Kernel) Live() int { return len(k.live) }

func (k *Kernel) currentName() string {
	if k.current == nil {
		return "driver"
	}
	return k.current.name
}

// RunFor runs the world until virtual time has advanced by d (timers due at
// exactly that time fire), or until a failure, which it returns. Tasks left
// waiting with no timer pending are not a deadlock here: the driver may act
// between runs (create a pod, inject a fault) and wake them.
func (k *Kernel) RunFor(d time.Duration) error {
	k.idleOK = true
	defer func() { k.idleOK = false }()
	return k.drive(k.now.Add(d), nil)
}

// RunUntil runs until cond holds (checked before every step), for at most
// limit of virtual time. It returns the failure, or ErrLimit if limit passed
// with cond still false.
func (k *Kernel) RunUntil(cond func() bool, limit time.Duration) error {
	met := false
	err := k.drive(k.now.Add(limit), func() bool {
		met = cond()
		return met
	})
	if err != nil {
		return err
	}
	if !met && !cond() {
		return fmt.Errorf("%w: condition still false after %v of virtual time (seed %d; replay: %s)",
			ErrLimit, limit, k.cfg.Seed, k.cfg.Replay(k.cfg.Seed))
	}
	return nil
}

// Run runs until every task has finished and no timer is pending, or until
// a failure (including the budgets in Config).
func (k *Kernel) Run() error {
	return k.drive(time.Time{}, nil)
}

// ErrLimit is returned by RunUntil when its time limit passes.
var ErrLimit = fmt.Errorf("sim: time limit reached")

func (k *Kernel) drive(until time.Time, cond func() bool) error {
	if k.closed {
		panic("sim: run on a closed kernel")
	}
	if k.current != nil {
		panic("sim: Run called from inside a task")
	}
	if k.failure != nil {
		return k.failure
	}
	k.until, k.cond = until, cond
	if next := k.pick(); next != nil {
		k.resume(next)
		<-k.driverRun
	}
	k.cond = nil
	if k.failure != nil {
		return k.failure
	}
	return nil
}

// pick chooses the next task to run, advancing virtual time when nothing is
// ready. It returns nil when control must go back to the driver.
func (k *Kernel) pick() *task {
	for {
		if k.failure != nil {
			return nil
		}
		if k.cond != nil && k.cond() {
			return nil
		}
		if len(k.ready) > 0 {
			k.steps++
			if k.steps > k.cfg.MaxSteps {
				k.fail("step-budget", nil, fmt.Sprintf("more than %d scheduling steps", k.cfg.MaxSteps), "")
				return nil
			}
			i := 0
			if len(k.ready) > 1 {
				i = k.choices.IntN(len(k.ready))
			}
			t := k.ready[i]
			copy(k.ready[i:], k.ready[i+1:])
			k.ready[len(k.ready)-1] = nil
			k.ready = k.ready[:len(k.ready)-1]
			k.rec.Record(k.Elapsed(), t.name, "run")
			return t
		}
		if len(k.timers) == 0 {
			switch {
			case k.idleOK:
				// Time passes in an idle (even an empty) world.
				k.now = k.until
			case len(k.live) > 0:
				k.fail("deadlock", nil, "no task is ready and no timer is pending", "")
			}
			return nil
		}
		due := k.timers[0].due
		if !k.until.IsZero() && due > k.until.Sub(k.epoch) {
			k.now = k.until
			return nil
		}
		if k.cfg.MaxTime > 0 && due > k.cfg.MaxTime {
			k.fail("time-budget", nil, fmt.Sprintf("virtual time would pass the budget of %v", k.cfg.MaxTime), "")
			return nil
		}
		k.now = k.epoch.Add(due)
		for len(k.timers) > 0 && k.timers[0].due == due {
			e := heap.Pop(&k.timers).(*timerEntry)
			k.fire(e)
		}
	}
}

// resume hands the baton to t. The caller must not touch kernel state
// afterwards until it is resumed itself.
func (k *Kernel) resume(t *task) {
	t.state = stateRunning
	k.current = t
	t.wake <- struct{}{}
}

// switchFrom gives up the baton held by t (which has already recorded why it
// waits, or put itself back on the ready list) and returns when t is resumed.
func (k *Kernel) switchFrom(t *task) {
	next := k.pick()
	if next == t {
		t.state = stateRunning
		return
	}
	if next == nil {
		k.current = nil
		k.driverRun <- struct{}{}
	} else {
		k.resume(next)
	}
	<-t.wake
	if k.stopping || t.killed() {
		panicGoexit()
	}
}

// running returns the task making a call, or panics if the caller is not a
// task (the driver, between runs).
func (k *Kernel) running(op string) *task {
	if k.current == nil {
		panic(fmt.Sprintf("sim: %s called outside a simulated task", op))
	}
	if k.stopping || k.current.killed() {
		panicGoexit()
	}
	return k.current
}

// park blocks t until something wakes it; it returns the wake-up's error.
func (k *Kernel) park(t *task, waitingOn string) error {
	t.state = stateBlocked
	t.waitingOn = waitingOn
	t.since = k.Elapsed()
	t.wakeErr = nil
	k.switchFrom(t)
	return t.wakeErr
}

// wakeTask makes a blocked task ready, undoing every wait it registered.
func (k *Kernel) wakeTask(t *task, err error) {
	if t.state != stateBlocked {
		return
	}
	if t.timer != nil {
		if t.timer.index >= 0 {
			heap.Remove(&k.timers, t.timer.index)
		}
		t.timer = nil
	}
	if t.ctxLink.list != nil {
		t.ctxLink.list.remove(t)
	}
	if t.sigLink.list != nil {
		t.sigLink.list.remove(t)
	}
	t.wakeErr = err
	t.state = stateReady
	t.waitingOn = ""
	k.ready = append(k.ready, t)
}

// Close ends every task that has not finished (their deferred calls run) so
// that no goroutine outlives the simulation. The kernel cannot run again.
func (k *Kernel) Close() {
	if k.closed {
		return
	}
	if k.current != nil {
		panic("sim: Close called from inside a task")
	}
	k.closed = true
	k.stopping = true
	for _, t := range k.sortedLive() {
		t.wake <- struct{}{}
		<-t.exited
	}
	k.live = map[uint64]*task{}
	k.ready = nil
	k.timers = nil
}
