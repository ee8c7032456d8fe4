package backoff

import (
	"sync"
	"time"
)

// Restarts is the crash-loop back-off as the kubelet keeps it (v1.37:
// client-go's flowcontrol.Backoff with the kubelet's expiry), one entry
// per key. An entry is made by the first restart that follows an exit,
// so that first restart goes at once; every later one doubles the delay
// (Initial, 2·Initial, … capped at Max), measured from the exited
// instance's FinishedAt. The kubelet asks, when it is about to start a
// container that has an exited instance, InBackOff with that instance's
// FinishedAt; when it is not held, Next records the restart. An entry
// whose last restart is more than ResetAfter before the exit (or before
// now: the kubelet's housekeeping drops such entries every 2 s) is gone,
// and the curve starts again at once. It is safe for concurrent use.
type Restarts struct {
	cfg     Config
	mu      sync.Mutex
	entries map[string]restartEntry
}

// restartEntry is one key's back-off: the delay an exit now waits and
// when the restart that set it was made.
type restartEntry struct {
	delay     time.Duration
	restarted time.Time
}

// NewRestarts returns an empty crash-loop back-off with cfg's curve (zero
// fields: 10 s, 300 s, 10 min).
func NewRestarts(cfg Config) *Restarts {
	return &Restarts{cfg: cfg.withDefaults(), entries: map[string]restartEntry{}}
}

// live returns key's entry unless it has expired for an exit at finished
// judged at now. The caller holds mu.
func (r *Restarts) live(key string, finished, now time.Time) (restartEntry, bool) {
	e, ok := r.entries[key]
	if !ok {
		return e, false
	}
	if finished.Sub(e.restarted) > r.cfg.ResetAfter || now.Sub(e.restarted) > r.cfg.ResetAfter {
		delete(r.entries, key)
		return e, false
	}
	return e, true
}

// InBackOff reports whether a container of key whose latest exited
// instance finished at finished must still wait at now, and the delay
// it waits (the waiting message's "back-off 20s").
func (r *Restarts) InBackOff(key string, finished, now time.Time) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.live(key, finished, now)
	if !ok {
		e.delay = firstHold(r.cfg.Initial)
	}
	if now.Sub(finished) >= e.delay {
		return 0, false
	}
	return e.delay, true
}

// Next records a restart of key at now after an exit at finished: the
// first of a curve (or after it expired) sets the delay of the next exit
// to Initial, every later one doubles it, up to Max.
func (r *Restarts) Next(key string, finished, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.live(key, finished, now)
	if ok {
		e.delay = min(2*e.delay, r.cfg.Max)
	} else {
		e.delay = min(r.cfg.Initial+firstHold(r.cfg.Initial), r.cfg.Max)
	}
	e.restarted = now
	r.entries[key] = e
}

// Forget drops the keys with the given prefix (a pod that is gone).
func (r *Restarts) Forget(prefix string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	deletePrefix(r.entries, prefix)
}
