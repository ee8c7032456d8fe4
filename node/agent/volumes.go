package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/activepods"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/status"
	"github.com/lockstep-dev/lockstep/node/volume"
)

// waitForVolumes makes the pod's volumes desired and waits for them
// (volume.Manager.WaitForPod), unless the pod is terminal. When the wait
// times out, the pod gets a FailedMount event naming the volumes and the
// cause, its containers are reported ContainerCreating, and the error
// makes its worker retry later; other pods are not held up.
func (a *Agent) waitForVolumes(ctx context.Context, pod *corev1.Pod) error {
	prev := a.status.WithCachedStatus(pod)
	if podutil.IsTerminal(prev.Status.Phase) {
		return nil
	}
	a.pods.volumes.AddPod(pod)
	err := a.pods.volumes.WaitForPod(ctx, pod)
	if err == nil || ctx.Err() != nil {
		return err
	}
	msg := "Unable to attach or mount volumes: " + err.Error()
	if a.d.API.Events != nil {
		ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
		a.d.API.Events.Event(ref, corev1.EventTypeWarning, volume.ReasonFailedMount, msg)
	}
	st, ok := a.pleg.Cache().Get(pod.UID)
	if !ok {
		st = &podstate.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	waiting := map[string]status.Waiting{}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		waiting[c.Name] = status.Waiting{Reason: podutil.ReasonContainerCreating}
	}
	a.status.SetPodStatus(pod, status.Generate(prev, st, waiting, nil, a.nodeAddrs(ctx, pod), a.d.Clock.Now()))
	return fmt.Errorf("volumes of pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

// knownPod reports whether some part of the agent still has a pod
// (activepods.Known). The volume manager never cleans up a known pod's
// directory.
func (a *Agent) knownPod(uid types.UID) bool { return activepods.Known(a.podSets(), uid) }
