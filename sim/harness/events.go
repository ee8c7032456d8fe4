package harness

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// runtimeEvents feeds the PLEG's evented mode from the fake runtime's
// in-process event subscription.
type runtimeEvents struct{ rt *fakecri.Runtime }

func (e runtimeEvents) Subscribe(context.Context) (deps.ContainerEventStream, error) {
	return &eventStream{sub: e.rt.SubscribeEvents("pleg")}, nil
}

type eventStream struct{ sub *fakecri.EventSubscription }

// Next returns the next container event; when the stream ends (or the
// caller gives up) the subscription is closed so it stops queueing.
func (s *eventStream) Next(ctx context.Context) (*runtimeapi.ContainerEventResponse, error) {
	ev, err := s.sub.Next(ctx)
	if err != nil {
		s.sub.Close()
	}
	return ev, err
}
