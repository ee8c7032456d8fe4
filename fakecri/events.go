package fakecri

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// EventSubscription is a deterministic, in-process stream of container
// lifecycle events: CONTAINER_CREATED, STARTED, STOPPED and DELETED, for
// containers and (as containerd does, with the sandbox ID as container ID)
// for sandboxes. Events that happen while nobody reads are queued, up to
// Config.EventBuffer; beyond that new events are dropped, like containerd.
type EventSubscription struct {
	r    *Runtime
	name string
	sig  Signal

	// Guarded by r.mu.
	opened  bool
	queue   []*runtimeapi.ContainerEventResponse
	err     error // set when the stream has ended
	dropped uint64
}

// SubscribeEvents opens an event subscription. The name labels the signal
// the subscription waits on.
func (r *Runtime) SubscribeEvents(name string) *EventSubscription {
	s := &EventSubscription{r: r, name: name, sig: r.newSignal("fakecri/events/" + name)}
	r.mu.Lock()
	defer r.unlock()
	if r.cfg.NoEvents {
		s.err = status.Error(codes.Unimplemented, "GetContainerEvents is not implemented: fakecri runs without events, like containerd 1.6")
		return s
	}
	r.subs = append(r.subs, s)
	return s
}

// Next returns the next event, blocking until there is one, the stream
// ends (runtime restart: codes.Unavailable) or ctx ends.
//
// Scripted exits happen lazily, so a waiting Next must wake up for them:
// when the Clock implements DeadlineClock, Next waits on its Signal with a
// context whose deadline is the next scheduled exit among all containers,
// so it wakes for a CRI call's event or for that exit, whichever comes
// first. With a plain Clock, Next sleeps until the next scheduled exit
// (events from calls made meanwhile are delivered then, in order) and waits
// on the Signal only when no exit is scheduled.
func (s *EventSubscription) Next(ctx context.Context) (*runtimeapi.ContainerEventResponse, error) {
	r := s.r
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	dc, hasDeadline := r.clock.(DeadlineClock)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.mu.Lock()
		now := r.now()
		r.advance(now)
		if len(s.queue) > 0 {
			ev := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			r.unlock()
			return ev, nil
		}
		if s.err != nil {
			err := s.err
			r.unlock()
			return nil, err
		}
		next, scheduled := r.nextExit()
		r.unlock()
		switch {
		case !scheduled:
			if err := s.sig.Wait(ctx); err != nil {
				return nil, err
			}
		case hasDeadline:
			wctx, cancel := dc.WithDeadline(ctx, time.Unix(0, next))
			err := s.sig.Wait(wctx)
			cancel()
			if err != nil && ctx.Err() != nil {
				return nil, ctx.Err()
			}
		default:
			r.clock.Sleep(time.Duration(next - now))
		}
	}
}

// open runs the GetContainerEvents faults once, when the stream starts.
// It returns the stream's error if it has ended with nothing left to read.
func (s *EventSubscription) open(ctx context.Context) error {
	r := s.r
	r.mu.Lock()
	if s.err != nil && len(s.queue) == 0 {
		err := s.err
		r.unlock()
		return err
	}
	if s.opened {
		r.unlock()
		return nil
	}
	s.opened = true
	r.unlock()
	if err := r.enter(ctx, "GetContainerEvents", callTarget{}); err != nil {
		r.mu.Lock()
		s.closeLocked(err)
		r.unlock()
		return err
	}
	return nil
}

// Dropped is the number of events dropped because the queue was full.
func (s *EventSubscription) Dropped() uint64 {
	s.r.mu.Lock()
	defer s.r.unlock()
	return s.dropped
}

// Close ends the subscription; a waiting Next returns an error.
func (s *EventSubscription) Close() {
	r := s.r
	r.mu.Lock()
	defer r.unlock()
	s.queue = nil
	s.closeLocked(status.Error(codes.Canceled, "fakecri: event subscription closed"))
}

// closeLocked ends the stream with err and wakes its reader.
func (s *EventSubscription) closeLocked(err error) {
	r := s.r
	if s.err == nil {
		s.err = err
	}
	for i, o := range r.subs {
		if o == s {
			r.subs = append(r.subs[:i], r.subs[i+1:]...)
			break
		}
	}
	r.pending = append(r.pending, s.sig)
}

// GetContainerEvents streams events to containerEventsCh until ctx ends or
// the stream breaks. It is meant for the gRPC server path; in-process,
// deterministic consumers use SubscribeEvents. The callback, if any, is
// called with a nil client once the stream is established.
func (r *Runtime) GetContainerEvents(ctx context.Context, containerEventsCh chan *runtimeapi.ContainerEventResponse, connectionEstablishedCallback func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	s := r.SubscribeEvents("GetContainerEvents")
	defer s.Close()
	if err := s.open(ctx); err != nil {
		return err
	}
	if connectionEstablishedCallback != nil {
		connectionEstablishedCallback(nil)
	}
	for {
		ev, err := s.Next(ctx)
		if err != nil {
			return err
		}
		select {
		case containerEventsCh <- ev:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// broadcast queues ev to every subscription. Caller holds r.mu.
func (r *Runtime) broadcast(ev *runtimeapi.ContainerEventResponse) {
	for i, s := range r.subs {
		if len(s.queue) >= r.cfg.EventBuffer {
			s.dropped++
			continue
		}
		if i > 0 {
			ev = proto.Clone(ev).(*runtimeapi.ContainerEventResponse)
		}
		s.queue = append(s.queue, ev)
		r.pending = append(r.pending, s.sig)
	}
}

// emitContainerEvent reports a container's lifecycle change at time at.
func (r *Runtime) emitContainerEvent(c *container, typ runtimeapi.ContainerEventType, at int64) {
	if len(r.subs) == 0 {
		return
	}
	r.broadcast(&runtimeapi.ContainerEventResponse{
		ContainerId:        c.id,
		ContainerEventType: typ,
		CreatedAt:          at,
		PodSandboxStatus:   r.sandboxStatus(c.sb),
		ContainersStatuses: r.containerStatuses(c.sb),
	})
}

// emitSandboxEvent reports a sandbox's lifecycle change at time at.
func (r *Runtime) emitSandboxEvent(sb *sandbox, typ runtimeapi.ContainerEventType, at int64) {
	if len(r.subs) == 0 {
		return
	}
	r.broadcast(&runtimeapi.ContainerEventResponse{
		ContainerId:        sb.id,
		ContainerEventType: typ,
		CreatedAt:          at,
		PodSandboxStatus:   r.sandboxStatus(sb),
		ContainersStatuses: r.containerStatuses(sb),
	})
}

// containerStatuses returns the statuses of sb's live containers.
func (r *Runtime) containerStatuses(sb *sandbox) []*runtimeapi.ContainerStatus {
	if len(sb.containers) == 0 {
		return nil
	}
	out := make([]*runtimeapi.ContainerStatus, 0, len(sb.containers))
	for _, c := range sb.containers {
		out = append(out, r.containerStatus(c))
	}
	return out
}

// CloseEventStreams ends every event subscription with codes.Unavailable
// (the server is shutting down); later subscriptions work as before.
func (r *Runtime) CloseEventStreams() {
	r.mu.Lock()
	defer r.unlock()
	for len(r.subs) > 0 {
		s := r.subs[0]
		s.queue = nil
		s.closeLocked(status.Error(codes.Unavailable, "fakecri: runtime is shutting down"))
	}
}

// Pending is how many events Next would return without blocking (scripted
// exits up to the clock's now included).
func (s *EventSubscription) Pending() int {
	r := s.r
	r.mu.Lock()
	defer r.unlock()
	r.advance(r.now())
	return len(s.queue)
}
