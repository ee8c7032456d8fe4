// Package workload holds small programs written purely against the injected
// world (node/deps) that exercise the simulator kernel: a demo job system
// with timers, queues and shared state, and a toy with a real lost-update
// race. They back `lockstep sim`, the kernel's determinism tests and the
// benchmarks.
package workload

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// DemoConfig sizes the demo job system.
type DemoConfig struct {
	Producers   int           // tasks that submit jobs
	Workers     int           // tasks that take jobs from the shared queue
	JobsEach    int           // jobs each producer submits
	MaxWork     time.Duration // upper bound of one job's duration
	JobTimeout  time.Duration // a job running longer fails and is retried
	ReportEvery time.Duration // period of the reporter's ticker
}

// DefaultDemo has 40 producers, 60 workers, a reporter and a supervisor,
// plus a retry task per failed job: more than 100 tasks.
var DefaultDemo = DemoConfig{
	Producers: 40, Workers: 60, JobsEach: 10,
	MaxWork: 3 * time.Second, JobTimeout: 2 * time.Second, ReportEvery: 10 * time.Second,
}

// DemoResult is what the demo computed; it depends on the schedule.
type DemoResult struct {
	Done      int            // jobs finished
	Retries   int            // jobs retried after a timeout
	PerWorker map[string]int // jobs finished by each worker
	Order     []int          // job IDs in completion order
}

type job struct {
	id      int
	work    time.Duration
	attempt int
}

// Demo runs the job system on w until every job is done, then stops its
// workers and reporter. It returns once it has started everything; the
// result is complete when the world has run to the end.
func Demo(w deps.Deps, cfg DemoConfig) *DemoResult {
	res := &DemoResult{PerWorker: map[string]int{}}
	var mu sync.Mutex
	queue := deps.NewInbox[job](w.Tasks, "jobs")
	total := cfg.Producers * cfg.JobsEach
	ctx, stop := w.Tasks.WithCancel(context.Background())
	allDone := w.Tasks.NewSignal("all-done")

	finish := func(worker string, j job) {
		mu.Lock()
		res.Done++
		res.PerWorker[worker]++
		res.Order = append(res.Order, j.id)
		last := res.Done == total
		mu.Unlock()
		if last {
			allDone.Notify()
		}
	}

	for p := range cfg.Producers {
		w.Tasks.Go(fmt.Sprintf("producer-%d", p), func() {
			for i := range cfg.JobsEach {
				gap := time.Duration(w.Rand.IntN(1000)) * time.Millisecond
				w.Clock.Sleep(gap)
				work := time.Duration(1+w.Rand.IntN(int(cfg.MaxWork/time.Millisecond))) * time.Millisecond
				queue.Put(job{id: p*cfg.JobsEach + i, work: work})
			}
		})
	}
	for n := range cfg.Workers {
		name := fmt.Sprintf("worker-%d", n)
		w.Tasks.Go(name, func() {
			for {
				j, err := queue.Get(ctx)
				if err != nil {
					return
				}
				jctx, cancel := w.Clock.WithTimeout(ctx, cfg.JobTimeout)
				err = w.Tasks.Sleep(jctx, j.work)
				cancel()
				if err == nil || ctx.Err() != nil || j.attempt > 0 {
					// Retries always run to completion.
					finish(name, j)
					continue
				}
				mu.Lock()
				res.Retries++
				mu.Unlock()
				retry := job{id: j.id, work: j.work / 2, attempt: j.attempt + 1}
				w.Tasks.AfterFunc(fmt.Sprintf("retry-%d", j.id), time.Second, func() { queue.Put(retry) })
			}
		})
	}
	w.Tasks.Go("reporter", func() {
		t := w.Tasks.NewTicker("report", cfg.ReportEvery)
		defer t.Stop()
		for t.Wait(ctx) == nil {
			mu.Lock()
			done, retries := res.Done, res.Retries
			mu.Unlock()
			w.Log.Info("progress", "done", done, "of", total, "retries", retries, "queued", queue.Len())
		}
	})
	w.Tasks.Go("supervisor", func() {
		_ = allDone.Wait(context.Background())
		w.Log.Info("all jobs done", "jobs", total)
		stop()
	})
	return res
}

// LostUpdate starts two tasks that each add one to *counter with a
// read-modify-write split by a scheduling point: under some schedules one
// increment is lost and *counter ends at 1 instead of 2.
func LostUpdate(w deps.Deps, counter *int) {
	for _, name := range []string{"incr-a", "incr-b"} {
		w.Tasks.Go(name, func() {
			v := *counter
			w.Tasks.Yield()
			*counter = v + 1
			w.Log.Info("wrote", "counter", *counter)
		})
	}
}
