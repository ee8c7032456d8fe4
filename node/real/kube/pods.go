package kube

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// nodeSelector selects the pods bound to nodeName. The node identity may
// only read its own pods (NodeRestriction), so every list and watch must
// carry it.
func nodeSelector(nodeName string) string {
	return fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
}

// ListPods lists the pods bound to nodeName in all namespaces with a
// consistent read, which is never older than notOlderThan.
func (c *Client) ListPods(ctx context.Context, nodeName, _ string) ([]*corev1.Pod, string, error) {
	list, err := c.cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: nodeSelector(nodeName)})
	if err != nil {
		return nil, "", fmt.Errorf("list pods of node %q: %w", nodeName, err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = withoutManagedFields(&list.Items[i])
	}
	return pods, list.ResourceVersion, nil
}

// WatchPods watches the pods bound to nodeName in all namespaces from
// resourceVersion.
func (c *Client) WatchPods(ctx context.Context, nodeName, resourceVersion string) (deps.PodWatch, error) {
	w, err := c.cs.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{
		FieldSelector:   nodeSelector(nodeName),
		ResourceVersion: resourceVersion,
	})
	if err != nil {
		return nil, fmt.Errorf("watch pods of node %q from resource version %q: %w", nodeName, resourceVersion, err)
	}
	return &podWatch{w: w}, nil
}

// withoutManagedFields drops pod's metadata.managedFields (server-side
// apply's field owners): the agent never reads them, and every copy of a
// pod it keeps (the merged view, the status manager's, the workers') would
// carry them, a quarter of a small pod's bytes. The agent patches pods'
// status and creates mirror pods, never sends a whole pod back, so
// nothing it writes could clear them.
func withoutManagedFields(pod *corev1.Pod) *corev1.Pod {
	pod.ManagedFields = nil
	return pod
}

// errWatchClosed is returned by a pod watch whose result channel closed
// (server timeout, connection loss, Stop).
var errWatchClosed = errors.New("pod watch closed")

// podWatch adapts a watch.Interface to deps.PodWatch.
type podWatch struct {
	w watch.Interface
}

// Next returns the next pod event. Bookmarks are skipped; an ERROR event
// (such as 410 Gone for an expired resource version) becomes the API
// error it carries, and a closed channel becomes errWatchClosed.
func (p *podWatch) Next(ctx context.Context) (deps.PodEvent, error) {
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return deps.PodEvent{}, ctx.Err()
		case ev, ok = <-p.w.ResultChan():
		}
		if !ok {
			return deps.PodEvent{}, errWatchClosed
		}
		var t deps.PodEventType
		switch ev.Type {
		case watch.Bookmark:
			continue
		case watch.Error:
			return deps.PodEvent{}, fmt.Errorf("pod watch: %w", apierrors.FromObject(ev.Object))
		case watch.Added:
			t = deps.PodAdded
		case watch.Modified:
			t = deps.PodModified
		case watch.Deleted:
			t = deps.PodDeleted
		default:
			return deps.PodEvent{}, fmt.Errorf("pod watch: unexpected event type %q", ev.Type)
		}
		pod, isPod := ev.Object.(*corev1.Pod)
		if !isPod {
			return deps.PodEvent{}, fmt.Errorf("pod watch: %s event carries %T, not a pod", ev.Type, ev.Object)
		}
		return deps.PodEvent{Type: t, Pod: withoutManagedFields(pod)}, nil
	}
}

// Stop ends the watch.
func (p *podWatch) Stop() { p.w.Stop() }

// PatchPodStatus applies a strategic-merge patch to the pod's status
// subresource; the patch's metadata.uid is the write's precondition.
func (c *Client) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error) {
	out, err := c.cs.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("patch status of pod %s/%s: %w", namespace, name, err)
	}
	return withoutManagedFields(out), nil
}

// GetPod reads the pod from the apiserver (a consistent read).
func (c *Client) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	out, err := c.cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	return withoutManagedFields(out), nil
}

// DeletePod deletes the pod at once (grace period 0) if it still has uid,
// so a pod recreated under the same name is never deleted by mistake.
func (c *Client) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	grace := int64(0)
	err := c.cs.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: &grace,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil {
		return fmt.Errorf("delete pod %s/%s (uid %s): %w", namespace, name, uid, err)
	}
	return nil
}

// CreatePod creates a pod (a static pod's mirror).
func (c *Client) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	out, err := c.cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return out, nil
}
