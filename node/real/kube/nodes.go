package kube

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// GetNode reads a node through the heartbeat client.
func (c *Client) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	node, err := c.heartbeat.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get node %q: %w", name, err)
	}
	return node, nil
}

// CreateNode registers a node.
func (c *Client) CreateNode(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	out, err := c.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create node %q: %w", node.Name, err)
	}
	return out, nil
}

// PatchNodeStatus applies a strategic-merge patch to the node's status
// subresource through the heartbeat client.
func (c *Client) PatchNodeStatus(ctx context.Context, name string, patch []byte) (*corev1.Node, error) {
	out, err := c.heartbeat.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("patch status of node %q: %w", name, err)
	}
	return out, nil
}

// GetLease reads a coordination/v1 lease through the heartbeat client.
func (c *Client) GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	l, err := c.heartbeat.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get lease %s/%s: %w", namespace, name, err)
	}
	return l, nil
}

// CreateLease creates a lease in lease.Namespace.
func (c *Client) CreateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	l, err := c.heartbeat.CoordinationV1().Leases(lease.Namespace).Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create lease %s/%s: %w", lease.Namespace, lease.Name, err)
	}
	return l, nil
}

// UpdateLease replaces a lease; a stale lease.ResourceVersion fails with a
// conflict.
func (c *Client) UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	l, err := c.heartbeat.CoordinationV1().Leases(lease.Namespace).Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update lease %s/%s: %w", lease.Namespace, lease.Name, err)
	}
	return l, nil
}
