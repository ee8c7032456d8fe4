package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/activepods"
	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/status"
	"github.com/lockstep-dev/lockstep/node/volume"
)

// waitForVolumes makes the pod's volumes desired and waits for them
// (volume.Manager.WaitForPod), unless the pod is terminal. While some
// volume is not set up, the pod's status is written first, as the
// kubelet's SyncPod writes it before it waits for the volumes
// (writeWaitingStatus): a pod whose ConfigMap or Secret is missing shows
// Pending, PodScheduled True and its containers waiting, not nothing.
// When the wait times out, the pod gets a FailedMount event naming the
// volumes and the cause, and the error makes its worker retry later (its
// next sync writes the status again); other pods are not held up.
func (a *Agent) waitForVolumes(ctx context.Context, pod *corev1.Pod, lastSync time.Time, unsupported admission.Unsupported) error {
	prev := a.status.WithCachedStatus(pod)
	if podutil.IsTerminal(prev.Status.Phase) {
		return nil
	}
	a.pods.volumes.AddPod(pod)
	if !a.pods.volumes.AllSetUp(pod) {
		if err := a.writeWaitingStatus(ctx, pod, prev, lastSync, unsupported); err != nil {
			return err
		}
	}
	err := a.pods.volumes.WaitForPod(ctx, pod)
	if err == nil || ctx.Err() != nil {
		return err
	}
	msg := "Unable to attach or mount volumes: " + err.Error()
	if a.d.API.Events != nil {
		ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
		a.d.API.Events.Event(ref, corev1.EventTypeWarning, volume.ReasonFailedMount, msg)
	}
	return fmt.Errorf("volumes of pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

// writeWaitingStatus sets the status of pod (carrying its cached status:
// prev) generated from the runtime's view, as a sync does before its
// actions, for a sync about to wait for the pod's volumes: for a pod with
// no sandbox yet, phase Pending, PodScheduled True,
// PodReadyToStartContainers False, Initialized True (False while init
// containers wait), ContainersReady and Ready False, and every container
// waiting in ContainerCreating (PodInitializing with init containers).
func (a *Agent) writeWaitingStatus(ctx context.Context, pod, prev *corev1.Pod, lastSync time.Time, unsupported admission.Unsupported) error {
	st, err := a.pleg.Cache().GetNewerThan(ctx, pod.UID, viewSince(a.since(lastSync)))
	if err != nil {
		return fmt.Errorf("wait for the runtime view of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	s := status.Generate(prev, st, a.reasons(pod.UID), a.pods.probes.ForPod(pod, st), a.nodeAddrs(ctx, pod), a.d.Clock.Now())
	s = status.WithResources(s, a.cm.alloc.Allocated(pod), st)
	a.status.SetPodStatus(pod, withUnsupportedMessage(s, unsupported))
	return nil
}

// knownPod reports whether some part of the agent still has a pod
// (activepods.Known). The volume manager never cleans up a known pod's
// directory.
func (a *Agent) knownPod(uid types.UID) bool { return activepods.Known(a.podSets(), uid) }
