package kernel

import (
	"fmt"
	"strings"
	"time"
)

// Failure is why a simulation stopped: a deadlock, a panic in a task, or a
// budget exceeded. Its report ends with the command that replays the run.
type Failure struct {
	// Kind is "deadlock", "panic", "step-budget" or "time-budget".
	Kind string
	// Seed is the run's seed.
	Seed uint64
	// At is the virtual time elapsed when the run stopped.
	At time.Duration
	// Step is the number of scheduling steps taken.
	Step uint64
	// Task is the task that failed (panics), if any.
	Task string
	// Message says what happened.
	Message string
	// Waiting lists every unfinished task and what it waits on.
	Waiting []TaskWait
	// Stack is the failing task's stack (panics).
	Stack string
	// Replay is the command that replays the run.
	Replay string
}

// TaskWait is an unfinished task and what it waits on.
type TaskWait struct {
	Task      string
	WaitingOn string
	Since     time.Duration
}

// Error is the full report.
func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sim: %s at +%v (seed %d, step %d): %s\n", f.Kind, f.At, f.Seed, f.Step, f.Message)
	if len(f.Waiting) > 0 {
		b.WriteString("  unfinished tasks:\n")
		for _, w := range f.Waiting {
			fmt.Fprintf(&b, "    %s: %s (since +%v)\n", w.Task, w.WaitingOn, w.Since)
		}
	}
	if f.Stack != "" {
		b.WriteString("  stack:\n")
		for _, line := range strings.Split(strings.TrimRight(f.Stack, "\n"), "\n") {
			b.WriteString("    " + line + "\n")
		}
	}
	fmt.Fprintf(&b, "  replay: %s", f.Replay)
	return b.String()
}

func (k *Kernel) fail(kind string, t *task, msg, stack string) {
	if k.failure != nil {
		return
	}
	f := &Failure{
		Kind: kind, Seed: k.cfg.Seed, At: k.Elapsed(), Step: k.steps,
		Message: msg, Stack: stack, Replay: k.cfg.Replay(k.cfg.Seed),
	}
	if t != nil {
		f.Task = t.name
	}
	for _, w := range k.sortedLive() {
		if w == t {
			continue
		}
		what := w.waitingOn
		switch w.state {
		case stateReady:
			what = "ready"
		case stateRunning:
			what = "running"
		}
		f.Waiting = append(f.Waiting, TaskWait{Task: w.name, WaitingOn: what, Since: w.since})
	}
	k.failure = f
	k.rec.Record(k.Elapsed(), k.currentName(), "failure", fieldKind(kind), fieldMsg(msg))
}
