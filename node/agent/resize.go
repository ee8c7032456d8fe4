package agent

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/allocation"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/status"
)

// newAllocations opens the allocation checkpoint under the root
// directory; a checkpoint that cannot be read is logged and the agent
// starts from the pods' specs.
func newAllocations(d deps.Deps, cfg Config) *allocation.Store {
	root := cfg.Node.RootDir
	if root == "" {
		root = podspec.DefaultRootDir
	}
	s := allocation.NewStore(d.Files, root).WithFaults(d.Core)
	if err := s.Load(); err != nil {
		d.Log.Warn("the pod allocation checkpoint could not be read; allocations start from the pods' specs", "error", err.Error())
	}
	return s
}

// recordAllocation records an admitted pod's allocation; the checkpoint
// is written by flushAllocations before the pod's containers are made.
func (a *Agent) recordAllocation(pod *corev1.Pod) {
	if err := a.cm.alloc.Set(pod); err != nil {
		a.d.Log.Warn("checkpointing a pod's allocation failed", "pod", pod.Namespace+"/"+pod.Name, "error", err.Error())
	}
}

// flushAllocations writes the allocation checkpoint if an admission
// changed it since its last write: pod's sync calls it before creating
// anything sized by the allocation, so a restarted agent finds the
// allocation of every container it made. The admissions of a burst are
// written together.
//
// When the write fails and pod's own allocation is not in the file, the
// sync fails (retried after its back-off) before making anything: a
// container must not run with an allocation a restarted agent could not
// find. Other pods' allocations wait for the next write.
func (a *Agent) flushAllocations(pod *corev1.Pod) error {
	err := a.cm.alloc.Flush()
	if err == nil {
		return nil
	}
	if !a.cm.alloc.Written(pod.UID) {
		return fmt.Errorf("checkpoint the allocation of pod %s/%s before making anything sized by it: %w", pod.Namespace, pod.Name, err)
	}
	a.d.Log.Warn("checkpointing the pod allocations failed", "pod", pod.Namespace+"/"+pod.Name, "error", err.Error())
	return nil
}

// allocate is the resize step of a running pod's sync, as the kubelet's
// allocation manager: when the spec asks for other resources than the pod
// was allocated, the resize is admitted beside the other pods'
// allocations and, if it fits, becomes the pod's allocation (checkpointed,
// event ResizeStarted); otherwise it waits (PodResizePending, event
// ResizeDeferred or ResizeInfeasible once per reason and generation). It
// returns the pod to run: pod carrying its allocation.
func (a *Agent) allocate(pod *corev1.Pod, prev []corev1.PodCondition) (*corev1.Pod, status.Resize) {
	allocated := a.cm.alloc.Allocated(pod)
	if !a.cm.alloc.Has(pod.UID) {
		// Admitted by an agent that checkpointed nothing: the spec is
		// the allocation.
		a.recordAllocation(pod)
		return pod, status.Resize{}
	}
	if !allocation.Requested(pod, allocated) {
		a.admission.book.SetPendingResize(pod.UID, false)
		return allocated, status.Resize{}
	}
	others := slices.DeleteFunc(a.admittedPods(), func(p *corev1.Pod) bool { return p.UID == pod.UID })
	v := allocation.Decide(pod, allocated, a.admissionNode(), others)
	if !v.Allocate {
		a.admission.book.SetPendingResize(pod.UID, v.Reason == allocation.ReasonDeferred)
		if !pendingAlready(prev, v.Reason, pod.Generation) {
			kind, typ := allocation.EventResizeDeferred, corev1.EventTypeWarning
			if v.Reason == allocation.ReasonInfeasible {
				kind = allocation.EventResizeInfeasible
			}
			a.podEvent(pod, typ, kind, allocation.EventMessage("Pod resize "+v.AdmitReason, pod, pod.Generation, v.Message))
			a.d.Log.Info("pod resize pending", "pod", pod.Namespace+"/"+pod.Name, "reason", v.Reason, "message", v.Message)
		}
		return allocated, status.Resize{PendingReason: v.Reason, PendingMessage: v.Message}
	}
	if err := a.cm.alloc.SetResized(pod); err != nil {
		a.d.Log.Warn("checkpointing a pod's resize failed; will retry", "pod", pod.Namespace+"/"+pod.Name, "error", err.Error())
		return allocated, status.Resize{}
	}
	a.admission.book.Resized(pod) // what it uses of the node changed
	a.admission.book.SetPendingResize(pod.UID, false)
	a.podEvent(pod, corev1.EventTypeNormal, allocation.EventResizeStarted, allocation.EventMessage("Pod resize started", pod, pod.Generation, ""))
	a.d.Log.Info("pod resize accepted", "pod", pod.Namespace+"/"+pod.Name, "generation", pod.Generation)
	// A resize may have freed room for one that waits.
	a.wakePendingResizes(pod.UID)
	return pod, status.Resize{Allocated: true}
}

// pendingAlready reports whether prev holds a PodResizePending condition
// with reason at generation (its event was emitted then).
func pendingAlready(prev []corev1.PodCondition, reason string, generation int64) bool {
	for _, c := range prev {
		if c.Type == corev1.PodResizePending {
			return c.Reason == reason && c.ObservedGeneration == generation
		}
	}
	return false
}

// resizeInPlace brings the running containers of pod (carrying its
// allocation) to their allocated resources without restarting those
// whose resizePolicy allows it, growing the pod cgroup first; SetPod, after
// the sync, gives the pod cgroup its final (smaller) limits. It returns
// the failure's message ("" : none) and whether it changed anything.
func (a *Agent) resizeInPlace(ctx context.Context, pod *corev1.Pod, st *podstate.PodStatus) (errMsg string, changed bool) {
	if !a.cm.alloc.Resized(pod.UID) {
		return "", false
	}
	if err := a.cm.cgroups.GrowPod(pod, podspec.QOSClass(pod)); err != nil {
		return err.Error(), false
	}
	updates := a.exec.PlanResize(pod, st)
	if len(updates) == 0 {
		return "", false
	}
	if err := a.exec.Resize(ctx, pod, updates); err != nil {
		a.d.Log.Warn("pod resize failed; will retry", "pod", pod.Namespace+"/"+pod.Name, "error", err.Error())
		return err.Error(), true
	}
	return "", true
}

// finishResize ends a resize step after the sync: the pod cgroup gets its
// final limits (unless the resize failed), the runtime's view is read
// again if containers were resized in place (their resources changed
// without a state change a relist would notice), and rz learns whether
// the resize is still in progress. It returns the view to report.
func (a *Agent) finishResize(ctx context.Context, pod *corev1.Pod, st *podstate.PodStatus, rz *status.Resize, resized bool) *podstate.PodStatus {
	if rz.Error == "" {
		if err := a.cm.cgroups.SetPod(pod, podspec.QOSClass(pod)); err != nil {
			rz.Error = err.Error()
		}
	}
	view := st
	if resized {
		if err := a.pleg.RefreshPod(ctx, pod.UID); err == nil {
			if fresh, ok := a.pleg.Cache().Get(pod.UID); ok {
				view = fresh
			}
		}
	}
	rz.InProgress = a.cm.alloc.Resized(pod.UID) && a.exec.ResizeInProgress(pod, view)
	return view
}

// resizeStatus sets the resize conditions and the containers' resources
// of s, and emits ResizeError and ResizeCompleted as the kubelet does.
func (a *Agent) resizeStatus(pod *corev1.Pod, prev []corev1.PodCondition, s corev1.PodStatus, rz status.Resize, st *podstate.PodStatus) corev1.PodStatus {
	conds, completed, ended := status.ResizeConditions(prev, rz, pod.Generation, a.d.Clock.Now())
	if ended {
		a.podEvent(pod, corev1.EventTypeNormal, allocation.EventResizeCompleted, allocation.EventMessage("Pod resize completed", pod, completed, ""))
	}
	if rz.Error != "" {
		for _, c := range conds {
			if c.Type == corev1.PodResizeInProgress && !sameCondition(prev, c) {
				a.podEvent(pod, corev1.EventTypeWarning, allocation.EventResizeError, allocation.EventMessage("Pod resize error", pod, c.ObservedGeneration, rz.Error))
			}
		}
	}
	return status.WithResources(status.SetResizeConditions(s, conds), pod, st)
}

// sameCondition reports whether prev holds c with the same reason and
// message.
func sameCondition(prev []corev1.PodCondition, c corev1.PodCondition) bool {
	for _, p := range prev {
		if p.Type == c.Type {
			return p.Reason == c.Reason && p.Message == c.Message
		}
	}
	return false
}

// wakePendingResizes syncs the pods whose resize was deferred (but
// except), so that each is admitted again now that resources may have
// freed up.
func (a *Agent) wakePendingResizes(except types.UID) {
	for _, uid := range a.admission.book.PendingResizes(except) {
		a.WakePod(uid)
	}
}

// podEvent records an event on pod, when the agent has an event sink.
func (a *Agent) podEvent(pod *corev1.Pod, typ, reason, msg string) {
	if a.d.API.Events == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	a.d.API.Events.Event(ref, typ, reason, msg)
}

// resizing reports whether s shows a resize in progress.
func resizing(s corev1.PodStatus) bool {
	return slices.ContainsFunc(s.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodResizeInProgress })
}
