package deps

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// ObjectAPI reads the ConfigMaps and Secrets the node's pods reference
// (volumes, environment). Under Node authorization a node may read only
// the objects its own pods reference.
type ObjectAPI interface {
	// GetConfigMap reads one ConfigMap.
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	// GetSecret reads one Secret.
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}
