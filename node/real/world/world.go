// Package world is the production side of the injected world's time,
// randomness and concurrency: goroutines, channels and the wall clock.
// It lives under node/real, the one subtree exempt from the determinism
// lint; only cmd/ wires it in.
package world

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Clock returns the production clock.
func Clock() deps.Clock { return clock.New() }

// Tasks runs tasks as goroutines on the wall clock.
type Tasks struct{}

var _ deps.Tasks = Tasks{}

// Go starts fn on a new goroutine.
func (Tasks) Go(_ string, fn func()) { go fn() }

// Sleep waits for d or for ctx to end.
func (Tasks) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Yield does nothing: goroutines are preempted anyway.
func (Tasks) Yield() {}

// WithCancel is context.WithCancel.
func (Tasks) WithCancel(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(parent)
}

// AfterFunc runs fn on a new goroutine after d.
func (Tasks) AfterFunc(_ string, d time.Duration, fn func()) deps.Timer {
	return timer{time.AfterFunc(d, fn)}
}

type timer struct{ t *time.Timer }

func (t timer) Stop() bool                 { return t.t.Stop() }
func (t timer) Reset(d time.Duration) bool { return t.t.Reset(d) }

// NewTicker wraps time.Ticker.
func (Tasks) NewTicker(_ string, period time.Duration) deps.Ticker {
	return ticker{time.NewTicker(period)}
}

type ticker struct{ t *time.Ticker }

func (t ticker) Wait(ctx context.Context) error {
	select {
	case <-t.t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (t ticker) Reset(period time.Duration) { t.t.Reset(period) }
func (t ticker) Stop()                      { t.t.Stop() }

// NewSignal returns a signal backed by a channel of capacity one.
func (Tasks) NewSignal(string) deps.Signal { return signal(make(chan struct{}, 1)) }

type signal chan struct{}

func (s signal) Notify() {
	select {
	case s <- struct{}{}:
	default:
	}
}

func (s signal) Wait(ctx context.Context) error {
	select {
	case <-s:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Rand is a goroutine-safe PCG source.
type Rand struct {
	mu sync.Mutex
	r  *rand.Rand
}

// NewRand returns a source seeded from the runtime's random seed.
func NewRand() *Rand {
	return &Rand{r: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// IntN returns a uniform integer in [0, n).
func (r *Rand) IntN(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.IntN(n)
}
