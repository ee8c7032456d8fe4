package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/activepods"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/volume"
)

// waitForVolumes makes the pod's volumes desired and waits for them
// (volume.Manager.WaitForPod), unless the pod is terminal; waited says
// whether some volume was not set up yet (the runtime's view may have
// moved on meanwhile). SyncPod calls it after it wrote the pod's status,
// as the kubelet's SyncPod waits (WaitForAttachAndMount) only after
// generating and setting the status: a pod whose ConfigMap or Secret is
// missing shows Pending, PodScheduled True and its containers waiting
// while it waits. When the wait times out, the pod gets a FailedMount
// event naming the volumes and the cause, and the error makes its worker
// retry later (its next sync writes the status again); other pods are not
// held up.
func (a *Agent) waitForVolumes(ctx context.Context, pod *corev1.Pod) (waited bool, err error) {
	if podutil.IsTerminal(a.status.WithCachedStatus(pod).Status.Phase) {
		return false, nil
	}
	a.pods.volumes.AddPod(pod)
	if a.pods.volumes.AllSetUp(pod) {
		return false, nil
	}
	err = a.pods.volumes.WaitForPod(ctx, pod)
	if err == nil || ctx.Err() != nil {
		return true, err
	}
	msg := "Unable to attach or mount volumes: " + err.Error()
	if a.d.API.Events != nil {
		ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
		a.d.API.Events.Event(ref, corev1.EventTypeWarning, volume.ReasonFailedMount, msg)
	}
	return true, fmt.Errorf("volumes of pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

// knownPod reports whether some part of the agent still has a pod
// (activepods.Known). The volume manager never cleans up a known pod's
// directory.
func (a *Agent) knownPod(uid types.UID) bool { return activepods.Known(a.podSets(), uid) }
