package deps

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// ObjectAPI reads the ConfigMaps and Secrets the node's pods reference
// (volumes, environment): API.ConfigMaps and API.Secrets together, as
// API.Objects returns them. Under Node authorization a node may read only
// the objects its own pods reference.
type ObjectAPI interface {
	ConfigMapAPI
	SecretAPI
}

// Objects joins a's ConfigMaps and Secrets ports into one ObjectAPI; nil
// when either is missing (standalone: none can be read).
func (a API) Objects() ObjectAPI {
	if a.ConfigMaps == nil || a.Secrets == nil {
		return nil
	}
	return objects{a.ConfigMaps, a.Secrets}
}

type objects struct {
	ConfigMapAPI
	SecretAPI
}

// ObjectWatch is an open watch on one ConfigMap or Secret.
type ObjectWatch[T any] interface {
	// Next blocks for the object's next state: the first call returns its
	// state when the watch opened, each later one a newer state. A nil
	// object means it does not exist (or was deleted). An error means the
	// watch ended: the caller opens a new one; one wrapping io.EOF means
	// the apiserver closed it normally (its watch timeout), not a fault.
	Next(ctx context.Context) (T, error)
	// Stop releases the watch.
	Stop()
}

// ObjectWatchAPI watches single ConfigMaps and Secrets (a list and a
// watch with the field selector metadata.name=<name>, which Node
// authorization allows for the objects a node's pods reference), so the
// agent keeps them fresh without reading them again.
type ObjectWatchAPI interface {
	WatchConfigMap(ctx context.Context, namespace, name string) (ObjectWatch[*corev1.ConfigMap], error)
	WatchSecret(ctx context.Context, namespace, name string) (ObjectWatch[*corev1.Secret], error)
}

// NodeWatchAPI watches the node's own Node object (a list and a watch
// with the field selector metadata.name=<node>, which Node authorization
// allows), so admission sees its labels and taints as they change without
// reading the Node again.
type NodeWatchAPI interface {
	WatchNode(ctx context.Context, name string) (ObjectWatch[*corev1.Node], error)
}
