package fakecri

import (
	"context"
	"os"
	"path/filepath"
	"time"
)

// Clock is the time source of a Runtime. Every blocking wait on time
// (injected latency, stop grace periods, image pulls) goes through Sleep, so
// a simulator can schedule it. benbjohnson/clock's clock.New() satisfies it.
// Its time must be after the Unix epoch: CRI timestamps use 0 for "not yet".
type Clock interface {
	Now() time.Time
	Sleep(d time.Duration)
}

// DeadlineClock is optionally implemented by a Clock that can make contexts
// which end at a point of its own time (clock.New() and the simulator's
// virtual clock do). EventSubscription.Next uses it to wait for either a new
// event or the next scripted container exit, whichever comes first.
type DeadlineClock interface {
	WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc)
}

// Rand is the randomness source of a Runtime (latency jitter).
// *math/rand/v2.Rand satisfies it.
type Rand interface {
	IntN(n int) int
}

// Signal wakes one waiting task. Wait returns after a Notify made since the
// last Wait returned (one pending notification is remembered), or ctx.Err()
// when ctx ends. Notify never blocks.
type Signal interface {
	Notify()
	Wait(ctx context.Context) error
}

// Files receives container log output. The default writes to the OS; a
// simulator keeps it in memory. AppendFile is called with the runtime's
// lock held: it must not block or call back into the Runtime.
type Files interface {
	// AppendFile appends data to the file at path, creating the file if it
	// does not exist (but not its directory). Empty data just creates it.
	AppendFile(path string, data []byte) error
}

// NewChanSignal returns a Signal built on a 1-buffered channel, for use with
// the real clock. The name is ignored.
func NewChanSignal(name string) Signal {
	return &chanSignal{ch: make(chan struct{}, 1)}
}

// chanSignal is the real-world Signal.
type chanSignal struct {
	ch chan struct{}
}

// Notify records one pending notification.
func (s *chanSignal) Notify() {
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// Wait consumes the pending notification or waits for one.
func (s *chanSignal) Wait(ctx context.Context) error {
	select {
	case <-s.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OSFiles writes container logs to the operating system's files.
type OSFiles struct{}

// AppendFile appends data to path, creating it with mode 0640.
func (OSFiles) AppendFile(path string, data []byte) error {
	// Like containerd opening a container's log, create the container's
	// log directory; the pod's log directory (its parent) must exist.
	dir := filepath.Dir(path)
	if _, err := os.Stat(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	if len(data) > 0 {
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
