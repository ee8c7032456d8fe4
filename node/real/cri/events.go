package cri

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/node/deps"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// errStreamEnded replaces io.EOF: the runtime closed the event stream
// without an error (it is shutting down).
var errStreamEnded = status.Error(codes.Unavailable, "the runtime ended the container event stream")

// GetContainerEvents streams the runtime's container events into
// containerEventsCh until ctx ends or the stream fails, and returns why.
// connectionEstablishedCallback, if set, is called with the stream once it
// is open. No request timeout applies. Agent code uses EventSource.
func (c *Client) GetContainerEvents(ctx context.Context, containerEventsCh chan *runtimeapi.ContainerEventResponse, connectionEstablishedCallback func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.runtime.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		return wrap(err, "GetContainerEvents", "")
	}
	if connectionEstablishedCallback != nil {
		connectionEstablishedCallback(stream)
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errStreamEnded
			}
			return wrap(err, "GetContainerEvents", "")
		}
		select {
		case containerEventsCh <- ev:
		case <-ctx.Done():
			return wrap(status.FromContextError(ctx.Err()).Err(), "GetContainerEvents", "")
		}
	}
}

// EventSource is the runtime's container events as the PLEG's evented
// mode consumes them. Errors keep their gRPC status: a runtime without
// events (containerd 1.6) gives codes.Unimplemented, a restarting one
// codes.Unavailable.
func (c *Client) EventSource() deps.ContainerEvents { return eventSource{c} }

// eventSource opens GetContainerEvents streams.
type eventSource struct{ c *Client }

// Subscribe opens a GetContainerEvents stream that lives until ctx ends or
// the stream fails. It returns once the runtime has confirmed the
// subscription with its response headers (events of calls made afterwards
// are delivered), has failed it (the error is returned), or
// Options.EventHandshake has passed: runtimes that send headers only with
// the first event are then assumed subscribed.
func (s eventSource) Subscribe(ctx context.Context) (deps.ContainerEventStream, error) {
	sctx, cancel := context.WithCancel(ctx)
	stream, err := s.c.runtime.GetContainerEvents(sctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		cancel()
		return nil, wrap(err, "GetContainerEvents", "")
	}
	es := &eventStream{stream: stream, cancel: cancel, headerDone: make(chan struct{})}
	go es.awaitHeader()
	timer := time.NewTimer(s.c.opts.EventHandshake)
	defer timer.Stop()
	select {
	case <-es.headerDone:
		if es.ended {
			_, err := stream.Recv()
			cancel()
			if err == nil || errors.Is(err, io.EOF) {
				err = errStreamEnded
			}
			return nil, wrap(err, "GetContainerEvents", "")
		}
	case <-timer.C:
	case <-ctx.Done():
		cancel()
		<-es.headerDone
		return nil, wrap(status.FromContextError(ctx.Err()).Err(), "GetContainerEvents", "")
	}
	return es, nil
}

// eventStream is one open GetContainerEvents stream.
type eventStream struct {
	stream grpc.ServerStreamingClient[runtimeapi.ContainerEventResponse]
	cancel context.CancelFunc // closes the stream

	// headerDone is closed once the response headers arrived or the
	// stream ended before any (then ended is true).
	headerDone chan struct{}
	ended      bool

	mu  sync.Mutex // serialises Next: Recv is not for concurrent use
	err error      // the stream's end, once it has ended
}

// awaitHeader waits for the response headers. A stream that ends first
// has none.
func (s *eventStream) awaitHeader() {
	md, err := s.stream.Header()
	s.ended = md == nil || err != nil
	close(s.headerDone)
}

// Next returns the next container event. An error means the stream has
// ended (and is closed): the runtime's error with its gRPC status, or
// Canceled/DeadlineExceeded when ctx ended.
func (s *eventStream) Next(ctx context.Context) (*runtimeapi.ContainerEventResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	if err := ctx.Err(); err != nil {
		return nil, s.end(status.FromContextError(err).Err())
	}
	stop := context.AfterFunc(ctx, s.cancel)
	defer stop()
	<-s.headerDone // Header and Recv must not run at once; cancel ends both
	ev, err := s.stream.Recv()
	switch {
	case err == nil:
		return ev, nil
	case ctx.Err() != nil:
		err = status.FromContextError(ctx.Err()).Err()
	case errors.Is(err, io.EOF):
		err = errStreamEnded
	}
	return nil, s.end(err)
}

// end closes the stream and remembers why. Caller holds s.mu.
func (s *eventStream) end(err error) error {
	s.cancel()
	s.err = wrap(err, "GetContainerEvents", "")
	return s.err
}
