package pleg

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

type triggerKind uint8

const (
	containerEvent triggerKind = iota // ev is set
	streamUp                          // a subscription succeeded
	streamDown                        // the stream failed; err says why
	podResponsive                     // a probe of a timed-out pod succeeded
)

// trigger is what the event reader hands the relist task.
type trigger struct {
	kind triggerKind
	ev   *runtimeapi.ContainerEventResponse
	err  error
	uid  types.UID
}

// watch is the event reader task: it subscribes, forwards every event to
// the relist task, and after a failure tells it so and subscribes again
// after a backoff (RelistPeriod doubling up to EventedRelistPeriod, back to
// RelistPeriod once a stream has delivered an event).
func (p *PLEG) watch(ctx context.Context) {
	retry := backoff.Curve{Initial: p.cfg.RelistPeriod, Max: p.cfg.EventedRelistPeriod}
	for ctx.Err() == nil {
		stream, err := p.source.Subscribe(ctx)
		if err == nil {
			p.triggers.Put(trigger{kind: streamUp})
			for {
				ev, nerr := stream.Next(ctx)
				if nerr != nil {
					err = nerr
					break
				}
				retry.Reset()
				p.triggers.Put(trigger{kind: containerEvent, ev: ev})
			}
		}
		if ctx.Err() != nil {
			return
		}
		p.triggers.Put(trigger{kind: streamDown, err: err})
		if p.tasks.Sleep(ctx, retry.Next()) != nil {
			return
		}
	}
}

// eventPod adds the pod an event is about to pods: from the sandbox labels
// it carries, else from the snapshot. An event about an object nobody knows
// asks for a full relist soon.
func (p *PLEG) eventPod(ev *runtimeapi.ContainerEventResponse, pods map[types.UID]bool) {
	if uid := types.UID(ev.GetPodSandboxStatus().GetLabels()[podstate.LabelPodUID]); uid != "" {
		pods[uid] = true
		return
	}
	id := ev.GetContainerId()
	if o := p.snap.containers[id]; o != nil {
		pods[o.pod] = true
		return
	}
	if o := p.snap.sandboxes[id]; o != nil {
		pods[o.pod] = true
		return
	}
	p.relistSoon = true
}

// relistPods relists each pod on its own (lists filtered by its UID
// label), updates the snapshot and the cache and emits its events. The
// global timestamp does not move: only a full relist vouches for every pod.
func (p *PLEG) relistPods(ctx context.Context, uids []types.UID) {
	for _, uid := range uids {
		ts := p.clock.Now()
		sandboxes, containers, err := p.listPod(ctx, uid)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.log.Warn("pleg: relist of one pod failed; a full relist follows", "pod", uid, "err", err)
			p.relistSoon = true
			continue
		}
		p.ch.reset()
		p.snap.diffPod(uid, sandboxes, containers, p.ch)
		p.refreshAndEmit(ctx, ts, false)
	}
}

// listPod lists one pod's sandboxes and containers.
func (p *PLEG) listPod(ctx context.Context, uid types.UID) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container, error) {
	lctx, cancel := p.clock.WithTimeout(ctx, p.cfg.PodStatusTimeout)
	defer cancel()
	sel := map[string]string{podstate.LabelPodUID: string(uid)}
	sandboxes, err := p.rt.ListPodSandbox(lctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, nil, wrapf(err, "list sandboxes of pod %s", uid)
	}
	containers, err := p.rt.ListContainers(lctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, nil, wrapf(err, "list containers of pod %s", uid)
	}
	return sandboxes, containers, nil
}

// refreshOnMiss is the cache's hook for a GetNewerThan about to wait.
// Relisting every second, the wait is short: it does nothing. While events
// flow, full relists are rare, so it refreshes the pod itself, once the
// clock has passed minTime (a status read at minTime is not newer than it).
func (p *PLEG) refreshOnMiss(ctx context.Context, uid types.UID, minTime time.Time) {
	if !p.isEvented() {
		return
	}
	if d := p.clock.Until(minTime); d >= 0 {
		if p.tasks.Sleep(ctx, d+time.Nanosecond) != nil {
			return
		}
	}
	if err := p.RefreshPod(ctx, uid); err != nil {
		p.log.Debug("pleg: refresh for a waiting reader failed", "pod", uid, "err", err)
	}
}

func sortedUIDs(set map[types.UID]bool) []types.UID {
	out := make([]types.UID, 0, len(set))
	for uid := range set {
		out = append(out, uid)
	}
	slices.Sort(out)
	return out
}
