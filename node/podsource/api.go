package podsource

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// The API source's retry delays: the first failure after a healthy watch
// relists at once; each further consecutive failure waits a jittered delay
// in [d/2, d], d doubling from backoffInitial up to backoffMax.
const (
	backoffInitial = time.Second
	backoffMax     = 30 * time.Second
)

// APISource lists and watches the pods bound to this node through
// a deps.PodAPI and feeds them to a Merger: every list is a complete
// snapshot (so pods deleted while the watch was down are removed), every
// watch event is applied as it comes. Mirror pods are delivered like any
// other API pod.
type APISource struct {
	d     deps.Core
	pods  deps.PodAPI
	node  string
	m     *Merger
	retry backoff.Curve
	// seenRV is the newest resource version the source has seen (a list's
	// or a watch event's): relists ask for one no older.
	seenRV string
}

// NewAPISource returns the apiserver source of nodeName's pods feeding m.
func NewAPISource(d deps.Core, pods deps.PodAPI, nodeName string, m *Merger) *APISource {
	retry := backoff.Curve{Initial: backoffInitial, Max: backoffMax, Jitter: 0.5, Rand: d.Rand}
	return &APISource{d: d, pods: pods, node: nodeName, m: m, retry: retry}
}

// Run lists and watches until ctx ends, relisting whenever the watch
// breaks. Consecutive failures back off; a watch that delivered an event
// or stayed open for backoffMax counts as healthy and resets the count.
func (s *APISource) Run(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		if failures > 1 {
			if s.d.Tasks.Sleep(ctx, s.retry.Delay(failures-1)) != nil {
				return
			}
		}
		healthy, err := s.listAndWatch(ctx)
		if ctx.Err() != nil {
			return
		}
		if healthy {
			failures = 0
		}
		failures++
		s.d.Log.Warn("pod list/watch failed; relisting", "node", s.node, "failures", failures, "error", err)
	}
}

// listAndWatch lists once, then applies watch events until the watch
// breaks. healthy reports whether the watch worked for a while.
func (s *APISource) listAndWatch(ctx context.Context) (healthy bool, err error) {
	// A relist may not go back behind what the source has seen: a list
	// from a lagging cache that lacks a pod seen since would remove it.
	pods, rv, err := s.pods.ListPods(ctx, s.node, s.seenRV)
	if err != nil {
		return false, fmt.Errorf("list pods of node %q: %w", s.node, err)
	}
	s.seenRV = rv
	s.m.Set(SourceAPI, pods)
	w, err := s.pods.WatchPods(ctx, s.node, rv)
	if err != nil {
		return false, fmt.Errorf("watch pods of node %q from resource version %q: %w", s.node, rv, err)
	}
	defer w.Stop()
	start := s.d.Clock.Now()
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			healthy = healthy || s.d.Clock.Since(start) >= backoffMax
			return healthy, fmt.Errorf("watch pods of node %q: %w", s.node, err)
		}
		healthy = true
		if ev.Pod != nil {
			s.seenRV = ev.Pod.ResourceVersion
			s.m.Apply(SourceAPI, ev.Type, ev.Pod)
			if s.d.Fault(deps.FaultWatchEventRepeated) {
				s.m.Apply(SourceAPI, ev.Type, ev.Pod)
			}
		}
		if s.d.Fault(deps.FaultWatchClosed) {
			return healthy, fmt.Errorf("watch pods of node %q: %w", s.node, deps.FaultWatchClosed.Err())
		}
	}
}
