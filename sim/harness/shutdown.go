package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// nodeShutdown is the simulated systemd-logind: scenarios announce a
// shutdown (or cancel it) and the agent holds it back with a delay lock.
// Like logind it outlives agent restarts; a lock dies with the agent that
// took it.
type nodeShutdown struct {
	k      *kernel.Kernel
	events *deps.Inbox[bool]
	// MaxDelay is logind's InhibitDelayMaxSec: a longer lock is refused.
	maxDelay time.Duration
	state    *ShutdownState
}

// ShutdownState is what the simulated logind saw of a node shutdown.
type ShutdownState struct {
	// Started is when the shutdown was announced (-1: not announced).
	Started time.Duration
	// Cancelled: the last announced shutdown was cancelled.
	Cancelled bool
	// Inhibited: an agent holds the delay lock, for Delay.
	Inhibited bool
	Delay     time.Duration
	// Released is when the agent gave the lock back during the shutdown
	// (-1: not yet).
	Released time.Duration
}

func (s *nodeShutdown) Inhibit(_ context.Context, d time.Duration) error {
	if d > s.maxDelay {
		return fmt.Errorf("logind allows a shutdown delay of %v (InhibitDelayMaxSec), less than the %v asked for", s.maxDelay, d)
	}
	s.state.Inhibited, s.state.Delay = true, d
	s.k.Logger().Info("logind: delay lock taken", "component", "logind", "delay", d)
	return nil
}

func (s *nodeShutdown) Next(ctx context.Context) (bool, error) { return s.events.Get(ctx) }

func (s *nodeShutdown) Release() error {
	if !s.state.Inhibited {
		return fmt.Errorf("no delay lock held")
	}
	s.state.Inhibited = false
	if s.state.Started >= 0 && !s.state.Cancelled && s.state.Released < 0 {
		s.state.Released = s.k.Elapsed()
	}
	s.k.Logger().Info("logind: delay lock released", "component", "logind")
	return nil
}

// ShutdownNode announces that the machine is shutting down (logind's
// PrepareForShutdown(true)): the agent stops its pods and releases its
// delay lock, or the delay it asked for runs out.
func (h *Harness) ShutdownNode() {
	h.shutdown.state.Started, h.shutdown.state.Cancelled, h.shutdown.state.Released = h.K.Elapsed(), false, -1
	h.shutdown.events.Put(true)
}

// CancelShutdown announces that the shutdown was cancelled
// (PrepareForShutdown(false)).
func (h *Harness) CancelShutdown() {
	h.shutdown.state.Cancelled = true
	h.shutdown.events.Put(false)
}

// Shutdown is what the simulated logind saw so far.
func (h *Harness) Shutdown() ShutdownState { return *h.shutdown.state }

// OnStopContainer has fn told of every StopContainer call the agent makes
// (the container's ID and the grace period), as it makes it.
func (h *Harness) OnStopContainer(fn func(id string, grace int64)) {
	h.traced.onStop = append(h.traced.onStop, fn)
}
