package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
)

// Event records an event on the object ref points to. It never blocks:
// the broadcaster queues it (dropping when overloaded), its spam filter
// and aggregator may merge or skip it, and a background goroutine writes
// it to the apiserver at most at the configured event rate.
func (c *Client) Event(ref *corev1.ObjectReference, eventType, reason, message string) {
	c.recorder.Event(ref, eventType, reason, message)
}

// limitedSink is a record.EventSink that waits for a token before every
// write, like the kubelet's separately rate-limited event client.
type limitedSink struct {
	// ctx ends on Shutdown, releasing a blocked Wait.
	ctx     context.Context
	limiter flowcontrol.RateLimiter
	sink    record.EventSink
}

func (s *limitedSink) wait(verb string, ev *corev1.Event) error {
	if err := s.limiter.Wait(s.ctx); err != nil {
		return fmt.Errorf("%s event %s/%s: rate limiter: %w", verb, ev.Namespace, ev.Name, err)
	}
	return nil
}

// Create implements record.EventSink.
func (s *limitedSink) Create(ev *corev1.Event) (*corev1.Event, error) {
	if err := s.wait("create", ev); err != nil {
		return nil, err
	}
	return s.sink.Create(ev)
}

// Update implements record.EventSink.
func (s *limitedSink) Update(ev *corev1.Event) (*corev1.Event, error) {
	if err := s.wait("update", ev); err != nil {
		return nil, err
	}
	return s.sink.Update(ev)
}

// Patch implements record.EventSink.
func (s *limitedSink) Patch(old *corev1.Event, data []byte) (*corev1.Event, error) {
	if err := s.wait("patch", old); err != nil {
		return nil, err
	}
	return s.sink.Patch(old, data)
}
