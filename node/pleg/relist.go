package pleg

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

// Relist lists every sandbox and container, diffs them with the previous
// relist, refreshes the cache for the pods that changed (and the pods whose
// earlier refresh failed), stamps the cache's global timestamp and emits
// the events. It returns an error only when a list call fails; the previous
// state and the cache are then untouched.
func (p *PLEG) Relist(ctx context.Context) error {
	ts := p.clock.Now()
	if obs := p.cfg.Observer; obs != nil {
		prev := p.LastRelist()
		defer func() {
			var interval time.Duration
			if !prev.IsZero() {
				interval = ts.Sub(prev)
			}
			obs.ObserveRelist(p.clock.Since(ts), interval, p.LastRelist())
		}()
	}
	lctx, cancel := p.clock.WithTimeout(ctx, p.cfg.PodStatusTimeout)
	sandboxes, err := p.rt.ListPodSandbox(lctx, nil)
	var containers []*runtimeapi.Container
	if err == nil {
		containers, err = p.rt.ListContainers(lctx, nil)
		err = wrapf(err, "relist: list containers")
	} else {
		err = wrapf(err, "relist: list pod sandboxes")
	}
	cancel()
	if err != nil {
		return err
	}
	p.listSucceeded(ts)
	p.ch.reset()
	p.snap.diffAll(sandboxes, containers, p.ch)
	if len(sandboxes) > 0 && p.core.Fault(deps.FaultPLEGSpuriousEvent) {
		// A pod reported changed that did not: its worker syncs for
		// nothing.
		if uid := types.UID(sandboxes[p.core.Rand.IntN(len(sandboxes))].GetLabels()[podstate.LabelPodUID]); uid != "" {
			if _, changed := p.ch.pods[uid]; !changed {
				p.ch.pods[uid] = false
			}
		}
	}
	p.refreshAndEmit(ctx, ts, true)
	return nil
}

// refreshAndEmit refreshes the cache entry of every pod in p.ch (and, on a
// full relist, of the pods to retry), stamps the global timestamp on a full
// relist, then emits the events of the pods refreshed, held ones first,
// sorted by pod, container name and container ID.
func (p *PLEG) refreshAndEmit(ctx context.Context, ts time.Time, full bool) {
	ch := p.ch
	for uid, containerChanged := range ch.pods {
		if !containerChanged {
			ch.events = append(ch.events, Event{UID: uid, Type: PodSync})
		}
	}
	slices.SortStableFunc(ch.events, compareEvents)

	// The pods that changed, by UID, then the pods to retry, the least
	// recently tried first.
	order := p.order[:0]
	for uid := range ch.pods {
		order = append(order, uid)
	}
	slices.Sort(order)
	fresh := len(order)
	if full {
		for uid := range p.retry {
			if _, changed := ch.pods[uid]; !changed {
				order = append(order, uid)
			}
		}
		slices.SortFunc(order[fresh:], func(a, b types.UID) int {
			if c := p.retry[a].lastAttempt.Compare(p.retry[b].lastAttempt); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
	}

	out := p.out[:0]
	var budget context.Context
	cancel := func() {}
	next := 0 // the first event of the next fresh pod
	for k, uid := range order {
		var evs []Event
		if k < fresh {
			end := next
			for end < len(ch.events) && ch.events[end].UID == uid {
				end++
			}
			evs, next = ch.events[next:end], end
		}
		r := p.retry[uid]
		if r != nil && (r.probing || ts.Before(r.notBefore)) {
			r.held = append(r.held, evs...)
			p.cache.markStale(uid, ts)
			continue
		}
		if budget == nil {
			budget, cancel = p.clock.WithTimeout(ctx, refreshTimeout(p.cfg.PodStatusTimeout))
		}
		if err := budget.Err(); err != nil {
			p.failed(ctx, uid, ts, evs, fmt.Errorf("refresh of pod %s deferred: this relist's refresh budget is spent: %w", uid, err), false)
			continue
		}
		if err := p.refreshPod(budget, uid, ts); err != nil {
			p.failed(ctx, uid, ts, evs, err, true)
			continue
		}
		if r != nil {
			out = append(out, r.held...)
			delete(p.retry, uid)
		}
		out = append(out, evs...)
	}
	cancel()
	clear(order)
	p.order = order[:0]

	if full {
		p.cache.setGlobal(ts)
	}
	slices.SortStableFunc(out, compareEvents)
	for _, ev := range out {
		p.events.Put(ev)
	}
	clear(out)
	p.out = out[:0]
}

// failed keeps a pod whose refresh failed for a later retry: its cache
// entry stays as it was and is marked stale, its events wait. attempted is
// false when the pod was not even tried (the budget was spent). A refresh
// that timed out hands the pod to a probe task.
func (p *PLEG) failed(ctx context.Context, uid types.UID, ts time.Time, evs []Event, err error, attempted bool) {
	r := p.retry[uid]
	if r == nil {
		r = &retryState{}
		p.retry[uid] = r
	}
	r.held = append(r.held, evs...)
	p.cache.markStale(uid, ts)
	if !attempted {
		p.log.Info("pleg: pod refresh deferred to the next relist", "pod", uid, "err", err)
		return
	}
	r.failures++
	r.lastAttempt = ts
	if timedOut(err) && ctx.Err() == nil {
		r.probing = true
		p.tasks.Go("pleg-probe "+string(uid), func() { p.probe(ctx, uid) })
		p.log.Warn("pleg: pod refresh timed out; its previous status is kept and marked stale, a probe retries it",
			"pod", uid, "err", err)
		return
	}
	r.notBefore = ts.Add(retryBackoff(r.failures, p.cfg.RelistPeriod))
	p.log.Warn("pleg: pod refresh failed; its previous status is kept and marked stale",
		"pod", uid, "failures", r.failures, "retryAt", r.notBefore, "err", err)
}

// probe refreshes a pod whose refresh timed out, off the relist loop, with
// a backoff from RelistPeriod doubling up to maxRetryBackoff, until it
// succeeds; then the relist loop takes the pod back.
func (p *PLEG) probe(ctx context.Context, uid types.UID) {
	retry := backoff.Curve{Initial: p.cfg.RelistPeriod, Max: maxRetryBackoff}
	for {
		if p.tasks.Sleep(ctx, retry.Next()) != nil {
			return
		}
		if err := p.RefreshPod(ctx, uid); err == nil {
			p.triggers.Put(trigger{kind: podResponsive, uid: uid})
			return
		}
	}
}

// timedOut reports whether err is a deadline, ours or the runtime's.
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

// retryBackoff is the wait before the next refresh of a pod that failed
// failures times in a row: none after the first failure (the next relist
// retries), then twice the relist period, doubling up to maxRetryBackoff.
func retryBackoff(failures int, period time.Duration) time.Duration {
	retry := backoff.Curve{Initial: 2 * period, Max: maxRetryBackoff}
	return retry.Delay(failures - 1)
}

// refreshPod rebuilds one pod's cache entry from the snapshot's objects,
// within PodStatusTimeout.
func (p *PLEG) refreshPod(ctx context.Context, uid types.UID, ts time.Time) error {
	objs := p.snap.pods[uid]
	if objs == nil {
		p.cache.set(&podstate.PodStatus{UID: uid, Timestamp: ts})
		return nil
	}
	pctx, cancel := p.clock.WithTimeout(ctx, refreshTimeout(p.cfg.PodStatusTimeout))
	defer cancel()
	st, err := p.inspect(pctx, uid, ts, objs.sandboxes, objs.containers)
	if err != nil {
		return err
	}
	p.cache.set(st)
	return nil
}

// RefreshPod refreshes one pod's cache entry now, from a listing filtered by
// its UID label (for a caller that just acted on the pod and wants fresh
// state). It does not touch the relist state: the next relist still reports
// the changes as events.
func (p *PLEG) RefreshPod(ctx context.Context, uid types.UID) error {
	ts := p.clock.Now()
	sandboxes, containers, err := p.listPod(ctx, uid)
	if err != nil {
		return fmt.Errorf("update pod %s: %w", uid, err)
	}
	var sbObjs, cObjs []*object
	for _, sb := range sandboxes {
		if types.UID(sb.GetLabels()[podstate.LabelPodUID]) == uid {
			sbObjs = append(sbObjs, &object{id: sb.GetId()})
		}
	}
	for _, c := range containers {
		if types.UID(c.GetLabels()[podstate.LabelPodUID]) == uid {
			cObjs = append(cObjs, &object{id: c.GetId(), sandboxID: c.GetPodSandboxId()})
		}
	}
	pctx, cancel := p.clock.WithTimeout(ctx, p.cfg.PodStatusTimeout)
	defer cancel()
	st, err := p.inspect(pctx, uid, ts, sbObjs, cObjs)
	if err != nil {
		return fmt.Errorf("update pod %s: %w", uid, err)
	}
	p.cache.set(st)
	return nil
}

// inspect asks the runtime for the status of each of a pod's objects and
// builds its PodStatus stamped ts. An object the runtime no longer knows is
// left out: the next look at the runtime reports it gone.
func (p *PLEG) inspect(ctx context.Context, uid types.UID, ts time.Time, sandboxes, containers []*object) (*podstate.PodStatus, error) {
	st := &podstate.PodStatus{
		UID:        uid,
		Timestamp:  ts,
		Sandboxes:  make([]podstate.Sandbox, 0, len(sandboxes)),
		Containers: make([]podstate.Container, 0, len(containers)),
	}
	var ref podstate.PodRef
	for _, o := range sandboxes {
		resp, err := p.rt.PodSandboxStatus(ctx, o.id, false)
		if status.Code(err) == codes.NotFound {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("status of sandbox %q of pod %s: %w", o.id, uid, err)
		}
		s := resp.GetStatus()
		if s == nil {
			return nil, fmt.Errorf("status of sandbox %q of pod %s: the runtime returned no status", o.id, uid)
		}
		st.Sandboxes = append(st.Sandboxes, podstate.SandboxFromCRI(s))
		ref = podRef(ref, uid, s.GetLabels())
	}
	for _, o := range containers {
		resp, err := p.rt.ContainerStatus(ctx, o.id, false)
		if status.Code(err) == codes.NotFound {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("status of container %q of pod %s: %w", o.id, uid, err)
		}
		s := resp.GetStatus()
		if s == nil {
			return nil, fmt.Errorf("status of container %q of pod %s: the runtime returned no status", o.id, uid)
		}
		c := podstate.ContainerFromCRI(s, o.sandboxID)
		if p.cfg.Messages != nil {
			c.Message = withTerminationMessage(c.Message, p.cfg.Messages.Message(s))
		}
		st.Containers = append(st.Containers, c)
		ref = podRef(ref, uid, s.GetLabels())
	}
	st.Name, st.Namespace = ref.Name, ref.Namespace
	st.Sort()
	return st, nil
}

// withTerminationMessage appends a container's termination message to the
// runtime's message, as upstream: "<runtime's>: <termination message>".
func withTerminationMessage(runtimeMsg, msg string) string {
	switch {
	case msg == "":
		return runtimeMsg
	case runtimeMsg == "":
		return msg
	}
	return runtimeMsg + ": " + msg
}

// podRef keeps the first complete pod identity read from labels of uid.
func podRef(have podstate.PodRef, uid types.UID, labels map[string]string) podstate.PodRef {
	if have.Name != "" {
		return have
	}
	if r, err := podstate.PodRefFromLabels(labels); err == nil && r.UID == uid {
		return r
	}
	return have
}

// wrapf wraps a non-nil err with a formatted context; nil stays nil.
func wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}
