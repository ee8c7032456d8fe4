package kube

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// WatchConfigMap lists and watches one configMap (field selector
// metadata.name, which Node authorization allows for a referenced one).
func (c *Client) WatchConfigMap(ctx context.Context, namespace, name string) (deps.ObjectWatch[*corev1.ConfigMap], error) {
	api := c.cs.CoreV1().ConfigMaps(namespace)
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	list, err := api.List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list configMap %s/%s: %w", namespace, name, err)
	}
	opts.ResourceVersion = list.ResourceVersion
	w, err := api.Watch(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("watch configMap %s/%s: %w", namespace, name, err)
	}
	var first *corev1.ConfigMap
	if len(list.Items) > 0 {
		first = &list.Items[0]
	}
	return &objWatch[*corev1.ConfigMap]{what: "configMap " + namespace + "/" + name, w: w, first: first, pending: true}, nil
}

// WatchSecret lists and watches one secret.
func (c *Client) WatchSecret(ctx context.Context, namespace, name string) (deps.ObjectWatch[*corev1.Secret], error) {
	api := c.cs.CoreV1().Secrets(namespace)
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	list, err := api.List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list secret %s/%s: %w", namespace, name, err)
	}
	opts.ResourceVersion = list.ResourceVersion
	w, err := api.Watch(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("watch secret %s/%s: %w", namespace, name, err)
	}
	var first *corev1.Secret
	if len(list.Items) > 0 {
		first = &list.Items[0]
	}
	return &objWatch[*corev1.Secret]{what: "secret " + namespace + "/" + name, w: w, first: first, pending: true}, nil
}

// WatchNode lists and watches one Node (field selector metadata.name,
// which Node authorization allows for the node's own).
func (c *Client) WatchNode(ctx context.Context, name string) (deps.ObjectWatch[*corev1.Node], error) {
	api := c.cs.CoreV1().Nodes()
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	list, err := api.List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list node %s: %w", name, err)
	}
	opts.ResourceVersion = list.ResourceVersion
	w, err := api.Watch(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("watch node %s: %w", name, err)
	}
	var first *corev1.Node
	if len(list.Items) > 0 {
		first = &list.Items[0]
	}
	return &objWatch[*corev1.Node]{what: "node " + name, w: w, first: first, pending: true}, nil
}

// objWatch turns a client-go watch of one object into deps.ObjectWatch.
type objWatch[T runtime.Object] struct {
	what    string
	w       watch.Interface
	first   T
	pending bool
}

func (o *objWatch[T]) Next(ctx context.Context) (T, error) {
	var zero T
	if o.pending {
		o.pending = false
		return o.first, nil
	}
	for {
		select {
		case <-ctx.Done():
			return zero, ctx.Err()
		case ev, ok := <-o.w.ResultChan():
			if !ok { // the apiserver ended the watch (its timeout): not a failure
				return zero, fmt.Errorf("watch %s: closed by the apiserver: %w", o.what, io.EOF)
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				obj, ok := ev.Object.(T)
				if !ok {
					return zero, fmt.Errorf("watch %s: unexpected %T", o.what, ev.Object)
				}
				return obj, nil
			case watch.Deleted:
				return zero, nil
			case watch.Error:
				return zero, fmt.Errorf("watch %s: %w", o.what, apierrors.FromObject(ev.Object))
			}
		}
	}
}

func (o *objWatch[T]) Stop() { o.w.Stop() }
