// Package unseen tracks the containers the agent started that the
// runtime's view does not show yet. A view that lacks one lags behind the
// agent's own actions: acting on it could start a second instance, so a
// sync waits for a fresher view (Stale), and a terminating pod stops the
// unseen containers too, by ID (WithUnseen). The tracker takes the time
// from its caller; it reads no clock.
package unseen

import (
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

// Timeout bounds how long a started container may stay missing from the
// runtime's view before the agent stops waiting for it.
const Timeout = time.Minute

// Container is a container instance the agent started.
type Container struct{ Name, ID string }

// expectation is a started container not seen yet, and since when.
type expectation struct {
	id    string
	since time.Time
}

// Tracker holds the started containers not seen yet, by pod; it is safe
// for concurrent use.
type Tracker struct {
	mu   sync.Mutex
	pods map[types.UID]map[string]expectation
}

// New returns an empty tracker.
func New() *Tracker { return &Tracker{pods: map[types.UID]map[string]expectation{}} }

// Expect records containers of pod uid started at now, until a view shows
// them.
func (t *Tracker) Expect(uid types.UID, now time.Time, started ...Container) {
	if len(started) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.pods[uid]
	if m == nil {
		m = map[string]expectation{}
		t.pods[uid] = m
	}
	for _, c := range started {
		m[c.Name] = expectation{id: c.ID, since: now}
	}
}

// Stale reports whether st lacks a container started for pod uid (or
// shows it not started yet, Created), and
// forgets the expectations st satisfies and those older than Timeout at
// now (returned as given up, for the caller to log).
func (t *Tracker) Stale(uid types.UID, st *podstate.PodStatus, now time.Time) (stale bool, givenUp []Container) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.pods[uid]
	for _, name := range slices.Sorted(maps.Keys(m)) {
		e := m[name]
		// A view that shows the instance still Created is older than its
		// start: acting on it would take it for one left Created by a
		// crashed sync and start another.
		found := slices.ContainsFunc(st.Containers, func(c podstate.Container) bool {
			return c.ID == e.id && c.State != podstate.ContainerCreated
		})
		switch {
		case found:
			delete(m, name)
		case now.Sub(e.since) > Timeout:
			givenUp = append(givenUp, Container{Name: name, ID: e.id})
			delete(m, name)
		default:
			stale = true
		}
	}
	if len(m) == 0 {
		delete(t.pods, uid)
	}
	return stale, givenUp
}

// WithUnseen returns st plus, in state unknown, the containers started for
// pod uid that st does not show yet, in name order.
func (t *Tracker) WithUnseen(uid types.UID, st *podstate.PodStatus) *podstate.PodStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.pods[uid]
	if len(m) == 0 {
		return st
	}
	out := *st
	out.Containers = slices.Clone(st.Containers)
	for _, name := range slices.Sorted(maps.Keys(m)) {
		e := m[name]
		if _, ok := st.Instance(e.id); !ok {
			out.Containers = append(out.Containers, podstate.Container{ID: e.id, Name: name, State: podstate.ContainerUnknown})
		}
	}
	return &out
}

// Forget drops what is expected of pod uid (it terminated).
func (t *Tracker) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pods, uid)
}
