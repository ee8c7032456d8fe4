package kube

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// ListServices lists the services of every namespace (the system:node
// role allows it) and returns the list's resource version.
func (c *Client) ListServices(ctx context.Context) ([]*corev1.Service, string, error) {
	list, err := c.cs.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("list services of all namespaces: %w", err)
	}
	out := make([]*corev1.Service, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, list.ResourceVersion, nil
}

// WatchServices watches the services of every namespace after
// resourceVersion, with bookmarks so that a watch the apiserver closes
// resumes from a recent resource version.
func (c *Client) WatchServices(ctx context.Context, resourceVersion string) (deps.ServiceWatch, error) {
	w, err := c.cs.CoreV1().Services(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{
		ResourceVersion:     resourceVersion,
		AllowWatchBookmarks: true,
	})
	if err != nil {
		return nil, fmt.Errorf("watch services of all namespaces from resource version %q: %w", resourceVersion, err)
	}
	return &serviceWatch{w: w}, nil
}

// serviceWatch adapts a watch.Interface to deps.ServiceWatch.
type serviceWatch struct {
	w watch.Interface
}

// Next returns the next service event or bookmark. An ERROR event (such
// as 410 Gone for an expired resource version) becomes the API error it
// carries; a closed channel (the apiserver's watch timeout) an error
// wrapping io.EOF.
func (s *serviceWatch) Next(ctx context.Context) (deps.ServiceEvent, error) {
	var ev watch.Event
	var ok bool
	select {
	case <-ctx.Done():
		return deps.ServiceEvent{}, ctx.Err()
	case ev, ok = <-s.w.ResultChan():
	}
	if !ok {
		return deps.ServiceEvent{}, fmt.Errorf("service watch: closed by the apiserver: %w", io.EOF)
	}
	if ev.Type == watch.Error {
		return deps.ServiceEvent{}, fmt.Errorf("service watch: %w", apierrors.FromObject(ev.Object))
	}
	svc, isService := ev.Object.(*corev1.Service)
	if !isService {
		return deps.ServiceEvent{}, fmt.Errorf("service watch: %s event carries %T, not a service", ev.Type, ev.Object)
	}
	out := deps.ServiceEvent{ResourceVersion: svc.ResourceVersion}
	switch ev.Type {
	case watch.Bookmark:
	case watch.Added, watch.Modified:
		out.Service = svc
	case watch.Deleted:
		out.Service, out.Deleted = svc, true
	default:
		return deps.ServiceEvent{}, fmt.Errorf("service watch: unexpected event type %q", ev.Type)
	}
	return out, nil
}

// Stop ends the watch.
func (s *serviceWatch) Stop() { s.w.Stop() }
