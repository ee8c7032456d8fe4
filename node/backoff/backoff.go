// Package backoff owns every back-off curve of the agent. Curve is one
// exponential retry curve (initial delay, factor, cap, jitter from
// deps.Rand, reset) that each retry loop walks: API relists, status write
// retries, PLEG refreshes and event subscriptions, node lease renewal and
// registration. Restarts is CrashLoopBackOff as the kubelet keeps it, per
// pod and container (the first restart at once, then 10 s doubling to
// 300 s, measured from the exited instance's FinishedAt, started again
// 10 min after the last restart). Backoff keeps one curve per key for
// image pulls: ImagePullBackOff per pod and image.
package backoff

import (
	"strings"
	"sync"
	"time"
)

// Config sets a back-off's curve.
type Config struct {
	// Initial is the first delay. Default 10 s.
	Initial time.Duration
	// Max caps the delay. Default 300 s.
	Max time.Duration
	// ResetAfter: an instance that ran at least this long before failing
	// starts the curve again. Default 10 min.
	ResetAfter time.Duration
}

// Backoff tracks one back-off curve per key. It is safe for concurrent use.
type Backoff struct {
	cfg     Config
	curve   Curve
	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	// failures counts the failures in a row; delay is what the last one
	// waits.
	failures int
	delay    time.Duration
	// failedAt identifies the failure the current delay was computed for,
	// so that asking again about the same failure does not double it.
	failedAt time.Time
}

// New returns an empty back-off with cfg's curve (zero fields: defaults).
func New(cfg Config) *Backoff {
	cfg = cfg.withDefaults()
	return &Backoff{cfg: cfg, curve: Curve{Initial: cfg.Initial, Max: cfg.Max}, entries: map[string]*entry{}}
}

// withDefaults fills cfg's zero fields with the defaults.
func (cfg Config) withDefaults() Config {
	if cfg.Initial <= 0 {
		cfg.Initial = 10 * time.Second
	}
	if cfg.Max <= 0 {
		cfg.Max = 300 * time.Second
	}
	if cfg.ResetAfter <= 0 {
		cfg.ResetAfter = 10 * time.Minute
	}
	return cfg
}

// Delay returns how long after failedAt the next attempt must wait, for a
// failure of key at failedAt by an attempt that had started at startedAt.
// Each distinct failure advances the curve once: the n-th consecutive
// failure waits Initial·2ⁿ⁻¹, capped at Max; a failure after a clean run
// of ResetAfter or more starts again at Initial.
func (b *Backoff) Delay(key string, startedAt, failedAt time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[key]
	if e == nil {
		e = &entry{}
		b.entries[key] = e
	}
	if !e.failedAt.Equal(failedAt) || e.delay == 0 {
		if e.delay == 0 || !startedAt.IsZero() && failedAt.Sub(startedAt) >= b.cfg.ResetAfter {
			e.failures = 0
		}
		e.failures++
		e.delay = b.curve.Delay(e.failures)
		e.failedAt = failedAt
	}
	return e.delay
}

// Remaining returns how long from now the attempt after the failure at
// failedAt must still wait (0 if it may go now); see Delay.
func (b *Backoff) Remaining(key string, startedAt, failedAt, now time.Time) time.Duration {
	d := failedAt.Add(b.Delay(key, startedAt, failedAt)).Sub(now)
	return max(d, 0)
}

// Forget drops the keys with the given prefix (a pod that is gone).
func (b *Backoff) Forget(prefix string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	deletePrefix(b.entries, prefix)
}

// deletePrefix deletes m's keys that start with prefix.
func deletePrefix[V any](m map[string]V, prefix string) {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			delete(m, k)
		}
	}
}

// Len is the number of keys tracked.
func (b *Backoff) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.entries)
}
