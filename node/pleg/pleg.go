// Package pleg is the pod lifecycle event generator: it watches the
// container runtime, turns what changed into per-pod events (a container
// started, died, was removed or changed; a pod's sandbox changed) and keeps
// the pod cache, the runtime's view of every pod that pod workers read.
//
// # Relisting
//
// Every RelistPeriod (1 s) the PLEG lists all sandboxes and containers,
// diffs the listing with the previous one, asks the runtime for the full
// status of each pod that changed (and only those), stores it in the cache,
// stamps the cache's global timestamp and then emits the events, sorted by
// pod UID, container name and container ID. Timestamps are clock readings
// taken before the list calls, so a status never claims to be newer than
// the data it was built from. A failed list leaves the previous state and
// cache intact; the next period tries again.
//
// # The cache's "newer than" rule
//
// A pod worker that acted on a pod at time t must not act again on a status
// read before t, or it would, for instance, start a container it has
// already started. Cache.GetNewerThan(uid, t) therefore waits for a status
// of uid stamped after t: the pod's own entry, or the global timestamp,
// which a relist sets once every pod is at least that fresh.
//
// # One pod failing, or hanging
//
// Each pod's refresh is bounded by PodStatusTimeout, and the whole refresh
// phase of a relist by the same duration, so a hung status call (upstream
// bug #94829) can stall a relist for at most PodStatusTimeout (2 min),
// below UnhealthyAfter (3 min). A pod whose refresh fails keeps its
// previous entry, is marked stale so that the global timestamp no longer
// vouches for it (its workers wait in GetNewerThan rather than act on an
// old view), and has its events held back until a refresh succeeds.
//
// A pod whose refresh failed fast is retried by the next relist, after the
// pods that changed, the least recently tried first, and after repeated
// failures with a doubling backoff (capped at 5 min). A pod whose refresh
// timed out is not retried inline again: a probe task ("pleg-probe <uid>")
// refreshes it off the loop with a backoff and, once it answers, hands it
// back to the next relist. So a hung pod stalls the loop once, for at most
// PodStatusTimeout, and never again while it stays hung; the pods deferred
// by that stall are refreshed by the following relist (several pods found
// hung at once stall one relist each). A stall delays every other pod's
// events by up to PodStatusTimeout: that is the price of bounding it rather
// than running pod refreshes concurrently.
//
// Health then means "the runtime answers the list calls and the relist
// loop turns": Healthy fails when no relist's lists have succeeded for
// UnhealthyAfter. Since a relist's refresh phase never outlasts
// PodStatusTimeout, a bad pod never makes the node NotReady; it only leaves
// that pod's status stale (and its workers waiting).
//
// # Evented mode
//
// With Config.UseEvents and a deps.ContainerEvents port, the PLEG consumes the runtime's
// container events: each event makes it relist just that pod (lists
// filtered by the pod UID label) and emit that pod's events; a full relist
// runs every EventedRelistPeriod (300 s) to catch anything missed (events
// dropped by the runtime), and right after every (re)subscription. While
// events flow, the global timestamp moves only at those rare full relists,
// so a GetNewerThan that would wait refreshes its pod itself (RefreshPod)
// instead. While a pod waits for a retry, and when the stream fails, the
// PLEG relists every RelistPeriod again, the latter until a new
// subscription succeeds (retried with a backoff from RelistPeriod to
// EventedRelistPeriod). Healthy allows EventedRelistPeriod more between
// relists while events flow.
package pleg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// EventType says what happened to a pod.
type EventType string

// The event types.
const (
	// ContainerStarted: a container is running that was not before.
	ContainerStarted EventType = "ContainerStarted"
	// ContainerDied: a container exited (or vanished while running).
	ContainerDied EventType = "ContainerDied"
	// ContainerRemoved: a container is gone from the runtime.
	ContainerRemoved EventType = "ContainerRemoved"
	// ContainerChanged: a container moved to a state the agent does not
	// act on by itself (created, unknown).
	ContainerChanged EventType = "ContainerChanged"
	// PodSync: only the pod's sandboxes changed; resync the pod.
	PodSync EventType = "PodSync"
)

// Event is one lifecycle change of a pod. ContainerID and ContainerName are
// empty for PodSync.
type Event struct {
	UID           types.UID
	Type          EventType
	ContainerID   string
	ContainerName string
}

// Config tunes the PLEG. Zero durations take the defaults.
type Config struct {
	// RelistPeriod is the time between relists (default 1 s).
	RelistPeriod time.Duration
	// UnhealthyAfter is how long without a successful relist makes the
	// PLEG unhealthy (default 3 min).
	UnhealthyAfter time.Duration
	// EventedRelistPeriod is the time between full relists while container
	// events flow (default 300 s).
	EventedRelistPeriod time.Duration
	// UseEvents turns evented mode on when the PLEG has an event source
	// (New's events); without one it relists only.
	UseEvents bool
	// PodStatusTimeout bounds the list calls of a relist, each pod's
	// refresh, and a relist's whole refresh phase (default 2 min). Keep it
	// below UnhealthyAfter.
	PodStatusTimeout time.Duration
	// Observer, when set, is told about every full relist (for metrics);
	// nil observes nothing. It must not block.
	Observer Observer
	// Messages, when set, reads the termination messages of exited
	// containers (node/termmsg); nil keeps the runtime's messages alone.
	Messages MessageReader
}

// MessageReader reads the termination message of an exited container
// from its CRI status ("" for none).
type MessageReader interface {
	Message(s *runtimeapi.ContainerStatus) string
}

// Observer watches full relists (the relist loop's and Relist's; not the
// per-pod relists of evented mode). ObserveRelist is called once at the end
// of each, whether its lists succeeded or not, from the relist task:
// duration is the relist's own time (lists, refreshes, emitting); interval
// is the time from the start of the previous relist whose lists succeeded
// to this one's start, 0 when there was none; lastSeen is LastRelist()
// after this relist (zero until a relist's lists succeed).
type Observer interface {
	ObserveRelist(duration, interval time.Duration, lastSeen time.Time)
}

// The defaults.
const (
	DefaultRelistPeriod        = time.Second
	DefaultUnhealthyAfter      = 3 * time.Minute
	DefaultEventedRelistPeriod = 300 * time.Second
	DefaultPodStatusTimeout    = 2 * time.Minute

	// maxRetryBackoff caps the wait between refreshes of a failing pod.
	maxRetryBackoff = 5 * time.Minute
)

func (c Config) withDefaults() Config {
	if c.RelistPeriod <= 0 {
		c.RelistPeriod = DefaultRelistPeriod
	}
	if c.UnhealthyAfter <= 0 {
		c.UnhealthyAfter = DefaultUnhealthyAfter
	}
	if c.EventedRelistPeriod <= 0 {
		c.EventedRelistPeriod = DefaultEventedRelistPeriod
	}
	if c.PodStatusTimeout <= 0 {
		c.PodStatusTimeout = DefaultPodStatusTimeout
	}
	return c
}

// retryState is a pod whose refresh failed: its events wait for a refresh
// that succeeds.
type retryState struct {
	held        []Event
	failures    int
	lastAttempt time.Time // zero: deferred without an attempt
	notBefore   time.Time
	// probing: the refresh timed out; a probe task retries it off the
	// relist loop and says when the pod answers again.
	probing bool
}

// PLEG is the pod lifecycle event generator. Its state (the snapshot and
// the pods to retry) belongs to the relist task: Relist must not run
// concurrently with itself or with the loop Start spawned.
type PLEG struct {
	cfg    Config
	core   deps.Core // for its fault points
	clock  deps.Clock
	tasks  deps.Tasks
	log    *slog.Logger
	rt     Runtime
	source deps.ContainerEvents // nil: no runtime events
	cache  *podCache
	events *deps.Inbox[Event]

	// Owned by the relist task.
	snap       *snapshot
	ch         *changes
	retry      map[types.UID]*retryState
	out        []Event
	order      []types.UID
	triggers   *deps.Inbox[trigger]
	relistSoon bool

	mu          sync.Mutex // guards the fields below
	lastRelist  time.Time
	healthLimit time.Duration
	evented     bool
}

// Runtime is what the PLEG reads of the CRI runtime: the sandbox and
// container lists it relists (all of them, or one pod's by label) and the
// statuses of the objects whose state changed. deps.Core's Runtime (the
// whole cri.RuntimeService) is one.
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// New returns a PLEG reading rt (and, in evented mode, events). Start runs it; Relist does one
// relist by hand.
func New(d deps.Core, rt Runtime, events deps.ContainerEvents, cfg Config) *PLEG {
	cfg = cfg.withDefaults()
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &PLEG{
		cfg:      cfg,
		core:     d,
		clock:    d.Clock,
		tasks:    d.Tasks,
		log:      log,
		rt:       rt,
		source:   events,
		events:   deps.NewInbox[Event](d.Tasks, "pleg-events"),
		snap:     newSnapshot(),
		ch:       newChanges(),
		retry:    map[types.UID]*retryState{},
		triggers: deps.NewInbox[trigger](d.Tasks, "pleg-triggers"),
	}
	p.cache = newPodCache(d.Tasks, p.refreshOnMiss)
	return p
}

// Start spawns the relist loop as the task "pleg-relist" (and, in evented
// mode, the event reader "pleg-container-events") and returns. They run
// until ctx ends.
func (p *PLEG) Start(ctx context.Context) {
	if p.cfg.UseEvents && p.source != nil {
		p.tasks.Go("pleg-container-events", func() { p.watch(ctx) })
	}
	p.tasks.Go("pleg-relist", func() { p.run(ctx) })
}

// Events is the inbox the PLEG puts lifecycle events in, after the cache
// holds the statuses they describe.
func (p *PLEG) Events() *deps.Inbox[Event] { return p.events }

// Cache is the pod cache the PLEG keeps.
func (p *PLEG) Cache() Cache { return p.cache }

// LastRelist is the clock reading taken before the list calls of the latest
// relist whose lists succeeded; zero before the first.
func (p *PLEG) LastRelist() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastRelist
}

// Healthy reports whether a relist's lists succeeded within UnhealthyAfter
// (plus EventedRelistPeriod while events flow, since full relists are then
// that rare). Per-pod refresh failures do not count: see the package doc.
func (p *PLEG) Healthy() (bool, error) {
	p.mu.Lock()
	last, limit := p.lastRelist, p.healthLimit
	p.mu.Unlock()
	if last.IsZero() {
		return false, errors.New("pleg: no relist has succeeded yet")
	}
	if age := p.clock.Since(last); age > limit {
		return false, fmt.Errorf("pleg: last successful relist was %v ago; the threshold is %v", age, limit)
	}
	return true, nil
}

func (p *PLEG) listSucceeded(ts time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ts.After(p.lastRelist) {
		p.lastRelist = ts
	}
	p.healthLimit = p.cfg.UnhealthyAfter
	if p.evented {
		p.healthLimit += p.cfg.EventedRelistPeriod
	}
}

func (p *PLEG) isEvented() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.evented
}

func (p *PLEG) setEvented(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evented = on
}

// period is the time from one full relist's start to the next's.
func (p *PLEG) period() time.Duration {
	if p.isEvented() && len(p.retry) == 0 && !p.relistSoon {
		return p.cfg.EventedRelistPeriod
	}
	return p.cfg.RelistPeriod
}

// run is the relist loop: relist, then wait for the next relist while
// handling container events and stream changes.
func (p *PLEG) run(ctx context.Context) {
	for ctx.Err() == nil {
		start := p.clock.Now()
		p.relistSoon = false
		if err := p.Relist(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			p.log.Warn("pleg: relist failed; keeping the previous state", "err", err)
		}
		if !p.waitForRelist(ctx, start) {
			return
		}
	}
}

// waitForRelist handles triggers until the next full relist is due (one
// period after start); it returns false once ctx has ended.
func (p *PLEG) waitForRelist(ctx context.Context, start time.Time) bool {
	var pending *trigger
	for {
		next := start.Add(p.period())
		var tr trigger
		if pending != nil {
			tr, pending = *pending, nil
		} else {
			if !p.clock.Now().Before(next) {
				return true
			}
			wctx, cancel := p.clock.WithDeadline(ctx, next)
			t, err := p.triggers.Get(wctx)
			cancel()
			if err != nil {
				return ctx.Err() == nil
			}
			tr = t
		}
		switch tr.kind {
		case streamUp:
			p.setEvented(true)
			p.log.Info("pleg: container events subscribed; relisting now and every " + p.cfg.EventedRelistPeriod.String())
			return true
		case podResponsive:
			if r := p.retry[tr.uid]; r != nil {
				// Retry it inline at the next relist, which emits its
				// held events.
				r.probing = false
				r.notBefore = time.Time{}
			}
		case streamDown:
			if p.isEvented() {
				p.log.Warn("pleg: container event stream failed; relisting every "+p.cfg.RelistPeriod.String(), "err", tr.err)
			}
			p.setEvented(false)
		case containerEvent:
			pods := map[types.UID]bool{}
			p.eventPod(tr.ev, pods)
			for {
				t, ok := p.triggers.TryGet()
				if !ok {
					break
				}
				if t.kind != containerEvent {
					pending = &t
					break
				}
				p.eventPod(t.ev, pods)
			}
			p.relistPods(ctx, sortedUIDs(pods))
		}
	}
}
