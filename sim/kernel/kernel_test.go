package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/choice"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/workload"
)

// newKernel returns a kernel closed at the end of the test.
func newKernel(t *testing.T, cfg kernel.Config) *kernel.Kernel {
	t.Helper()
	k := kernel.New(cfg)
	t.Cleanup(k.Close)
	return k
}

// event is what a test task observed, at virtual time since the epoch.
type event struct {
	At   time.Duration
	What string
}

type recorder struct {
	k      *kernel.Kernel
	events []event
}

func (r *recorder) add(format string, args ...any) {
	r.events = append(r.events, event{r.k.Elapsed(), fmt.Sprintf(format, args...)})
}

func TestEqualTimeTimersFireInCreationOrder(t *testing.T) {
	k := newKernel(t, kernel.Config{Choices: choice.First{}})
	r := &recorder{k: k}
	ts := k.Tasks()
	for _, name := range []string{"c", "a", "b"} {
		ts.AfterFunc(name, 5*time.Second, func() { r.add("fired %s", name) })
	}
	ts.AfterFunc("early", time.Second, func() { r.add("fired early") })
	if err := k.Run(); err != nil {
		t.Fatal(err)
	}
	want := []event{{time.Second, "fired early"}, {5 * time.Second, "fired c"}, {5 * time.Second, "fired a"}, {5 * time.Second, "fired b"}}
	if diff := cmp.Diff(want, r.events); diff != "" {
		t.Errorf("timer order (-want +got):\n%s", diff)
	}
}

func TestTimerStopAndReset(t *testing.T) {
	k := newKernel(t, kernel.Config{})
	r := &recorder{k: k}
	ts := k.Tasks()
	stopped := ts.AfterFunc("stopped", time.Second, func() { r.add("stopped fired") })
	reset := ts.AfterFunc("reset", time.Second, func() { r.add("reset fired") })
	var results []bool
	ts.Go("control", func() {
		results = append(results, stopped.Stop())             // pending: true
		results = append(results, stopped.Stop())             // already stopped: false
		results = append(results, reset.Reset(3*time.Second)) // pending: true
		k.Sleep(10 * time.Second)
		results = append(results, reset.Stop())             // fired: false
		results = append(results, reset.Reset(time.Second)) // not pending: false, fires again
	})
	if err := k.Run(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]bool{true, false, true, false, false}, results); diff != "" {
		t.Errorf("Stop/Reset results (-want +got):\n%s", diff)
	}
	want := []event{{3 * time.Second, "reset fired"}, {11 * time.Second, "reset fired"}}
	if diff := cmp.Diff(want, r.events); diff != "" {
		t.Errorf("firings (-want +got):\n%s", diff)
	}
}

func TestTickerIsDriftFreeAndKeepsOneTick(t *testing.T) {
	k := newKernel(t, kernel.Config{})
	r := &recorder{k: k}
	ts := k.Tasks()
	ctx, cancel := ts.WithCancel(context.Background())
	ts.Go("ticking", func() {
		tk := ts.NewTicker("tick", 10*time.Second)
		for i := 0; tk.Wait(ctx) == nil; i++ {
			r.add("tick")
			if i == 1 {
				// Busy for 25 s: two ticks pass, only one is kept.
				k.Sleep(25 * time.Second)
			}
			if i == 3 {
				tk.Reset(4 * time.Second)
			}
			if i == 5 {
				tk.Stop()
				cancel()
			}
		}
	})
	if err := k.Run(); err != nil {
		t.Fatal(err)
	}
	want := []event{
		{10 * time.Second, "tick"}, {20 * time.Second, "tick"},
		{45 * time.Second, "tick"}, // the kept tick from 30 s or 40 s
		{50 * time.Second, "tick"}, // still on the 10 s grid: no drift
		{54 * time.Second, "tick"}, {58 * time.Second, "tick"},
	}
	if diff := cmp.Diff(want, r.events); diff != "" {
		t.Errorf("ticks (-want +got):\n%s", diff)
	}
}

func TestContextDeadlines(t *testing.T) {
	k := newKernel(t, kernel.Config{})
	r := &recorder{k: k}
	ts := k.Tasks()
	ts.Go("waiter", func() {
		ctx, cancel := k.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		child, cancelChild := k.WithTimeout(ctx, time.Hour) // inherits the earlier deadline
		defer cancelChild()
		if d, ok := child.Deadline(); !ok || !d.Equal(k.Now().Add(3*time.Second)) {
			r.add("child deadline %v %v", d, ok)
		}
		err := ts.Sleep(child, 10*time.Second)
		r.add("sleep: %v", err)
		r.add("parent: %v", ctx.Err())
		// A standard-library child of a simulator context is cancelled with it.
		ctx2, cancel2 := k.WithDeadline(context.Background(), k.Now().Add(time.Second))
		defer cancel2()
		std, stdCancel := context.WithCancel(ctx2)
		defer stdCancel()
		k.Sleep(2 * time.Second)
		r.add("std child: %v", std.Err())
		// An already-expired deadline is cancelled at once.
		past, cancel3 := k.WithDeadline(context.Background(), k.Now())
		defer cancel3()
		r.add("past: %v", past.Err())
		sig := ts.NewSignal("never")
		r.add("wait on cancelled: %v", sig.Wait(past))
	})
	if err := k.Run(); err != nil {
		t.Fatal(err)
	}
	want := []event{
		{3 * time.Second, "sleep: context deadline exceeded"},
		{3 * time.Second, "parent: context deadline exceeded"},
		{5 * time.Second, "std child: context deadline exceeded"},
		{5 * time.Second, "past: context deadline exceeded"},
		{5 * time.Second, "wait on cancelled: context deadline exceeded"},
	}
	if diff := cmp.Diff(want, r.events); diff != "" {
		t.Errorf("deadlines (-want +got):\n%s", diff)
	}
}

func TestCancelWakesWaitersAtOnce(t *testing.T) {
	k := newKernel(t, kernel.Config{})
	r := &recorder{k: k}
	ts := k.Tasks()
	ctx, cancel := ts.WithCancel(context.Background())
	sig := ts.NewSignal("s")
	ts.Go("waiter", func() { r.add("signal wait: %v", sig.Wait(ctx)) })
	ts.Go("sleeper", func() { r.add("sleep: %v", ts.Sleep(ctx, time.Hour)) })
	ts.Go("canceller", func() { k.Sleep(7 * time.Second); cancel() })
	if err := k.Run(); err != nil {
		t.Fatal(err)
	}
	if len(r.events) != 2 {
		t.Fatalf("want 2 events, got %v", r.events)
	}
	for _, e := range r.events {
		if e.At != 7*time.Second || !strings.HasSuffix(e.What, "context canceled") {
			t.Errorf("event %v: want context canceled at 7s", e)
		}
	}
}

func TestSleepZeroYieldsWithoutTime(t *testing.T) {
	k := newKernel(t, kernel.Config{Choices: choice.First{}})
	r := &recorder{k: k}
	ts := k.Tasks()
	ts.Go("a", func() { r.add("a1"); k.Sleep(0); r.add("a2") })
	ts.Go("b", func() { r.add("b1"); k.Sleep(0); r.add("b2") })
	if err := k.Run(); err != nil {
		t.Fatal(err)
	}
	// FIFO: a runs, yields to b, which yields back to a.
	want := []event{{0, "a1"}, {0, "b1"}, {0, "a2"}, {0, "b2"}}
	if diff := cmp.Diff(want, r.events); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSignalRemembersOneNotification(t *testing.T) {
	k := newKernel(t, kernel.Config{})
	ts := k.Tasks()
	sig := ts.NewSignal("s")
	sig.Notify()
	sig.Notify()
	var got []error
	ts.Go("waiter", func() {
		got = append(got, sig.Wait(context.Background()))
		ctx, cancel := k.WithTimeout(context.Background(), time.Second)
		defer cancel()
		got = append(got, sig.Wait(ctx)) // the second Notify was not kept
	})
	if err := k.Run(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != nil || !errors.Is(got[1], context.DeadlineExceeded) {
		t.Errorf("got %v, want [nil, deadline exceeded]", got)
	}
}

func TestInboxMultipleConsumers(t *testing.T) {
	k := newKernel(t, kernel.Config{Seed: 3})
	ts := k.Tasks()
	in := deps.NewInbox[int](ts, "in")
	ctx, cancel := ts.WithCancel(context.Background())
	seen := map[int]int{}
	for c := range 3 {
		ts.Go(fmt.Sprintf("consumer-%d", c), func() {
			for {
				v, err := in.Get(ctx)
				if err != nil {
					return
				}
				seen[v]++
			}
		})
	}
	ts.Go("producer", func() {
		for i := range 50 {
			in.Put(i)
			if i%7 == 0 {
				k.Sleep(time.Millisecond)
			}
		}
		k.Sleep(time.Second)
		cancel()
	})
	if err := k.Run(); err != nil {
		t.Fatal(err)
	}
	want := map[int]int{}
	for i := range 50 {
		want[i] = 1
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("each value delivered once (-want +got):\n%s", diff)
	}
}

func TestDeadlockIsReportedWithTaskNames(t *testing.T) {
	k := newKernel(t, kernel.Config{Seed: 77})
	ts := k.Tasks()
	in := deps.NewInbox[string](ts, "orders")
	ts.Go("consumer", func() { _, _ = in.Get(context.Background()) })
	ts.Go("idle", func() { k.Sleep(2 * time.Second) })
	err := k.Run()
	var f *kernel.Failure
	if !errors.As(err, &f) {
		t.Fatalf("want a *kernel.Failure, got %v", err)
	}
	want := &kernel.Failure{
		Kind: "deadlock", Seed: 77, At: 2 * time.Second, Step: f.Step,
		Message: "no task is ready and no timer is pending",
		Waiting: []kernel.TaskWait{{Task: "consumer#1", WaitingOn: "signal orders"}},
		Replay:  "go run ./cmd/lockstep sim kernel-demo --seed 77",
	}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("failure (-want +got):\n%s", diff)
	}
	if !strings.HasSuffix(err.Error(), "replay: go run ./cmd/lockstep sim kernel-demo --seed 77") {
		t.Errorf("report does not end with the replay command:\n%s", err)
	}
}

func TestRunForLetsTasksIdleUntilTheDriverActs(t *testing.T) {
	k := newKernel(t, kernel.Config{})
	ts := k.Tasks()
	in := deps.NewInbox[string](ts, "orders")
	var got []string
	ts.Go("consumer", func() {
		for {
			v, err := in.Get(context.Background())
			if err != nil {
				return
			}
			got = append(got, fmt.Sprintf("%s at +%v", v, k.Elapsed()))
		}
	})
	if err := k.RunFor(time.Minute); err != nil {
		t.Fatalf("idle tasks under RunFor: %v", err)
	}
	if k.Elapsed() != time.Minute {
		t.Fatalf("elapsed %v, want 1m", k.Elapsed())
	}
	empty := newKernel(t, kernel.Config{})
	if err := empty.RunFor(time.Hour); err != nil || empty.Elapsed() != time.Hour {
		t.Fatalf("an empty world under RunFor(1h): err %v, elapsed %v", err, empty.Elapsed())
	}
	in.Put("first") // the driver acts between runs
	if err := k.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"first at +1m0s"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	err := k.RunUntil(func() bool { return len(got) == 2 }, time.Hour)
	var f *kernel.Failure
	if !errors.As(err, &f) || f.Kind != "deadlock" {
		t.Errorf("RunUntil with nothing able to change: want a deadlock report, got %v", err)
	}
}

func TestPanicIsReportedWithTaskAndSeed(t *testing.T) {
	k := newKernel(t, kernel.Config{Seed: 5, Replay: func(s uint64) string { return fmt.Sprintf("replay-me %d", s) }})
	ts := k.Tasks()
	ts.Go("bystander", func() { k.Sleep(time.Hour) })
	ts.Go("faulty", func() { k.Sleep(time.Second); panic("boom") })
	err := k.Run()
	var f *kernel.Failure
	if !errors.As(err, &f) {
		t.Fatalf("want a *kernel.Failure, got %v", err)
	}
	if f.Kind != "panic" || f.Task != "faulty#2" || f.At != time.Second || !strings.Contains(f.Message, "boom") {
		t.Errorf("unexpected failure: %+v", f)
	}
	if !strings.Contains(f.Stack, "kernel_test.go") {
		t.Errorf("stack does not show the panicking code:\n%s", f.Stack)
	}
	if !strings.HasSuffix(err.Error(), "replay: replay-me 5") {
		t.Errorf("report does not end with the replay command:\n%s", err)
	}
}

func TestBudgets(t *testing.T) {
	t.Run("steps", func(t *testing.T) {
		k := newKernel(t, kernel.Config{MaxSteps: 1000})
		k.Tasks().Go("spinner", func() {
			for {
				k.Tasks().Yield()
			}
		})
		var f *kernel.Failure
		if err := k.Run(); !errors.As(err, &f) || f.Kind != "step-budget" {
			t.Fatalf("want step-budget failure, got %v", err)
		}
	})
	t.Run("time", func(t *testing.T) {
		k := newKernel(t, kernel.Config{MaxTime: time.Minute})
		k.Tasks().Go("forever", func() {
			for {
				k.Sleep(time.Second)
			}
		})
		var f *kernel.Failure
		if err := k.Run(); !errors.As(err, &f) || f.Kind != "time-budget" || f.At != time.Minute {
			t.Fatalf("want time-budget failure at 1m, got %v", err)
		}
	})
}

func TestRunForAndRunUntil(t *testing.T) {
	k := newKernel(t, kernel.Config{})
	n := 0
	k.Tasks().Go("counter", func() {
		for {
			k.Sleep(time.Second)
			n++
		}
	})
	if err := k.RunFor(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if n != 10 || k.Elapsed() != 10*time.Second {
		t.Fatalf("after RunFor(10s): n=%d elapsed=%v", n, k.Elapsed())
	}
	if err := k.RunUntil(func() bool { return n >= 25 }, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n != 25 || k.Elapsed() != 25*time.Second {
		t.Fatalf("after RunUntil(n>=25): n=%d elapsed=%v", n, k.Elapsed())
	}
	err := k.RunUntil(func() bool { return n < 0 }, 5*time.Second)
	if !errors.Is(err, kernel.ErrLimit) || k.Elapsed() != 30*time.Second {
		t.Fatalf("RunUntil past its limit: err=%v elapsed=%v", err, k.Elapsed())
	}
}

func TestForeignContextIsRejected(t *testing.T) {
	k := newKernel(t, kernel.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k.Tasks().Go("misuse", func() { _ = k.Tasks().Sleep(ctx, time.Second) })
	err := k.Run()
	if err == nil || !strings.Contains(err.Error(), "context the simulator did not make") {
		t.Fatalf("want a clear failure for a foreign context, got %v", err)
	}
}

func TestCloseEndsParkedTasksAndRunsDefers(t *testing.T) {
	before := runtime.NumGoroutine()
	k := kernel.New(kernel.Config{})
	ts := k.Tasks()
	deferred := 0
	for i := range 20 {
		ts.Go(fmt.Sprintf("parked-%d", i), func() {
			defer func() {
				deferred++
				k.Sleep(time.Second) // a blocking call during Close ends the task again
				deferred += 100
			}()
			k.Sleep(time.Hour)
		})
	}
	if err := k.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	ts.Go("never-started", func() { deferred += 1000 })
	k.Close()
	if deferred != 20 {
		t.Errorf("deferred = %d, want 20 (each parked task's defer ran up to its blocking call)", deferred)
	}
	if after := goroutinesAfterExits(before); after > before {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines leaked: %d before, %d after Close\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

// goroutinesAfterExits returns the number of goroutines once it is no more
// than want, or after ten seconds of trying. A task tells Close it has ended
// just before its goroutine unwinds and returns, so that goroutine can still
// be counted for a moment after Close, and on a loaded machine its thread may
// wait for a CPU. The loop yields rather than sleeps; a goroutine Close really
// left behind is still counted at the end.
func goroutinesAfterExits(want int) int {
	deadline := time.Now().Add(10 * time.Second)
	n := runtime.NumGoroutine()
	for n > want && time.Now().Before(deadline) {
		runtime.Gosched()
		n = runtime.NumGoroutine()
	}
	return n
}

// runDemo runs the demo workload to the end and returns the trace hash.
func runDemo(t testing.TB, seed uint64) (string, *workload.DemoResult) {
	k := kernel.New(kernel.Config{Seed: seed})
	defer k.Close()
	res := workload.Demo(k.Deps(), workload.DefaultDemo)
	if err := k.Run(); err != nil {
		t.Fatal(err)
	}
	return k.Trace().Hash(), res
}

func TestSameSeedSameTrace(t *testing.T) {
	for _, seed := range []uint64{1, 42, 1 << 40} {
		hashes := map[string]bool{}
		var first *workload.DemoResult
		for _, procs := range []int{1, 4, 1} {
			prev := runtime.GOMAXPROCS(procs)
			h, res := runDemo(t, seed)
			runtime.GOMAXPROCS(prev)
			hashes[h] = true
			if first == nil {
				first = res
			} else if diff := cmp.Diff(first, res); diff != "" {
				t.Errorf("seed %d, GOMAXPROCS=%d: result differs (-first +now):\n%s", seed, procs, diff)
			}
		}
		if len(hashes) != 1 {
			t.Errorf("seed %d: trace hashes differ across runs: %v", seed, hashes)
		}
		total := workload.DefaultDemo.Producers * workload.DefaultDemo.JobsEach
		if first.Done != total {
			t.Errorf("seed %d: %d jobs done, want %d", seed, first.Done, total)
		}
	}
}

func TestDifferentSeedsExploreSchedules(t *testing.T) {
	h1, r1 := runDemo(t, 1)
	h2, r2 := runDemo(t, 2)
	if h1 == h2 {
		t.Errorf("seeds 1 and 2 gave the same trace %s", h1)
	}
	if cmp.Equal(r1.Order, r2.Order) {
		t.Errorf("seeds 1 and 2 finished jobs in the same order")
	}
}

func runLostUpdate(seed uint64) (counter int, hash string) {
	k := kernel.New(kernel.Config{Seed: seed})
	defer k.Close()
	workload.LostUpdate(k.Deps(), &counter)
	if err := k.Run(); err != nil {
		panic(err)
	}
	return counter, k.Trace().Hash()
}

func TestSeedsFindTheLostUpdateAndReplayIt(t *testing.T) {
	lossy, clean := uint64(0), uint64(0)
	for seed := uint64(1); seed <= 100 && (lossy == 0 || clean == 0); seed++ {
		if c, _ := runLostUpdate(seed); c == 1 && lossy == 0 {
			lossy = seed
		} else if c == 2 && clean == 0 {
			clean = seed
		}
	}
	if lossy == 0 || clean == 0 {
		t.Fatalf("the first 100 seeds did not explore both outcomes (lossy seed %d, clean seed %d)", lossy, clean)
	}
	c1, h1 := runLostUpdate(lossy)
	c2, h2 := runLostUpdate(lossy)
	if c1 != 1 || c2 != 1 || h1 != h2 {
		t.Errorf("seed %d does not replay the lost update: counters %d, %d; hashes %s, %s", lossy, c1, c2, h1, h2)
	}
	t.Logf("seed %d loses an update; seed %d does not", lossy, clean)
}

func TestKillGroupEndsItsTasksWhereTheyWait(t *testing.T) {
	k := newKernel(t, kernel.Config{Seed: 4})
	agent := k.NewGroup("agent")
	at := k.TasksIn(agent)
	var log []string
	add := func(s string) { log = append(log, fmt.Sprintf("+%v %s", k.Elapsed(), s)) }
	at.Go("worker", func() {
		defer add("worker defer")
		k.Tasks().Go("child", func() { // joins the agent group
			k.Sleep(time.Hour)
			add("child woke")
		})
		for {
			k.Sleep(time.Second)
		}
	})
	at.AfterFunc("later", time.Minute, func() { add("delayed task ran") })
	k.Tasks().Go("bystander", func() { k.Sleep(90 * time.Second); add("bystander woke") })
	if err := k.RunFor(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	k.KillGroup(agent)
	at.Go("after-kill", func() { add("spawned into a killed group") })
	if err := k.RunFor(2 * time.Hour); err != nil {
		t.Fatal(err)
	}
	want := []string{"+10s worker defer", "+1m30s bystander woke"}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if k.Live() != 0 {
		t.Errorf("%d tasks still live after the kill", k.Live())
	}
}
