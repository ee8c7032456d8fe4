// Package deps defines the injected world: every way the agent reaches time,
// randomness, concurrency, the container runtime, the apiserver, the machine,
// the probe network and files. Production passes the real world (node/real);
// the simulator passes its deterministic one. Agent code uses nothing else.
package deps

import (
	"context"
	"log/slog"
	"time"

	cri "k8s.io/cri-api/pkg/apis"
)

// Core is the part of the injected world every agent component uses:
// time, randomness, task coordination and the logger. Components take Core
// and the ports they use, never the whole Deps.
type Core struct {
	// Clock tells time and makes deadline contexts.
	Clock Clock
	// Rand is the only source of randomness (jitter, probe start delays).
	Rand Rand
	// Tasks starts and coordinates the agent's concurrent tasks.
	Tasks Tasks
	// Log is the structured logger; in the simulator it writes the trace.
	Log *slog.Logger
	// Faults turns the agent's fault points on (see Fault); nil in
	// production, where every point is a nil check.
	Faults Faults
}

// Deps is the complete injected world handed to the agent, which gives
// each component its part.
type Deps struct {
	Core

	// Runtime is the CRI v1 runtime service.
	Runtime cri.RuntimeService
	// Images is the CRI v1 image service.
	Images cri.ImageManagerService
	// RuntimeEvents is the runtime's container event stream (CRI
	// GetContainerEvents); nil when the runtime has none.
	RuntimeEvents ContainerEvents
	// API holds the narrow apiserver ports the agent uses.
	API API
	// Machine reports node capacity and usage.
	Machine Machine
	// ProbeNet dials HTTP, TCP and gRPC probe targets.
	ProbeNet ProbeNetwork
	// Files reads the static pod manifest directory and keeps the pod and
	// container log directories.
	Files Files
	// Mounts mounts the memory-backed volumes; nil makes them plain
	// directories on the node's disk.
	Mounts Mounter
	// Cgroups keeps the pod and QoS cgroups; nil leaves pods where the
	// runtime puts them.
	Cgroups Cgroups
	// OOMKills reports the kernel's OOM kills; nil when they cannot be
	// read (no /dev/kmsg).
	OOMKills OOMKills
	// Disk measures the pods' volumes and container log directories, once
	// a stats sample, for the eviction manager and the stats Summary; nil
	// leaves them unmeasured (no local-storage evictions for them, no
	// volume or log figures in the Summary).
	Disk DiskUsage
	// MemoryThreshold wakes the eviction manager when memory usage
	// crosses its threshold; nil: the manager sees memory every period.
	MemoryThreshold MemoryThresholdNotifier
	// Shutdown announces the machine's shutdown; nil: graceful node
	// shutdown is off.
	Shutdown ShutdownNotifier
	// ManifestHTTP fetches the HTTP static pod source; nil: none.
	ManifestHTTP ManifestHTTP
	// ManifestChanges tells the file source when the static pod manifest
	// directory changes; nil: the source only re-reads it every period.
	ManifestChanges DirChanges
	// DevicePlugins is where device plugins register; nil: no device
	// plugins (no extended resources from devices).
	DevicePlugins DevicePluginRegistry
}

// Clock is the part of github.com/benbjohnson/clock's Clock that a simulator
// can honour: clock.New() satisfies it in production. Timers, tickers and
// delayed tasks are not here: they come from Tasks.
type Clock interface {
	Now() time.Time
	Since(t time.Time) time.Duration
	Until(t time.Time) time.Duration
	// Sleep blocks the calling task for d; d <= 0 only yields.
	Sleep(d time.Duration)
	// WithTimeout returns a context cancelled after t of this clock's time.
	WithTimeout(parent context.Context, t time.Duration) (context.Context, context.CancelFunc)
	// WithDeadline returns a context cancelled at d on this clock.
	WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc)
}

// Rand is the injected randomness source. *math/rand/v2.Rand satisfies it.
type Rand interface {
	// IntN returns a uniform integer in [0, n); n must be > 0.
	IntN(n int) int
}

// Tasks is the agent's only way to run things concurrently and to wait.
// Every method that can block is a scheduling point in the simulator.
type Tasks interface {
	// Go starts fn as a new task. The name appears in traces and in
	// deadlock reports, so it should say what the task is for.
	Go(name string, fn func())
	// Sleep blocks for d or until ctx ends, returning ctx.Err() then.
	// A d <= 0 only yields to other ready tasks.
	Sleep(ctx context.Context, d time.Duration) error
	// Yield lets other ready tasks run before the caller continues (the
	// simulated apiserver and workloads use it to model work in steps).
	Yield()
	// WithCancel returns a cancellable child of parent. Agent code uses it
	// instead of context.WithCancel so the simulator sees cancellation.
	WithCancel(parent context.Context) (context.Context, context.CancelFunc)
	// AfterFunc runs fn as a new task named name once d has elapsed,
	// unless the returned Timer is stopped first.
	AfterFunc(name string, d time.Duration, fn func()) Timer
	// NewTicker returns a drift-free ticker with the given period.
	NewTicker(name string, period time.Duration) Ticker
	// NewSignal returns a wake-up signal, the building block of inboxes.
	NewSignal(name string) Signal
}

// Timer is a pending delayed task created by Tasks.AfterFunc.
type Timer interface {
	// Stop cancels the timer; it reports whether the timer was still pending.
	Stop() bool
	// Reset re-arms the timer to fire d from now; it reports whether the
	// timer was still pending. A fired or stopped timer fires again.
	Reset(d time.Duration) bool
}

// Ticker delivers ticks at fixed multiples of its period from its start.
// Like time.Ticker, at most one tick is kept for a task that is busy.
type Ticker interface {
	// Wait blocks until the next tick (or returns at once if one is
	// pending), or until ctx ends, returning ctx.Err() then.
	Wait(ctx context.Context) error
	// Reset changes the period and restarts the ticks from now.
	Reset(period time.Duration)
	// Stop ends the ticks; a pending tick is dropped.
	Stop()
}

// Signal wakes a waiting task. A Notify wakes one waiter, or, when nobody
// waits, is remembered (at most once) for the next Wait: like a channel of
// capacity one.
type Signal interface {
	// Notify wakes one waiter or leaves one pending notification.
	Notify()
	// Wait blocks until notified or until ctx ends, returning ctx.Err().
	Wait(ctx context.Context) error
}
