package status

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Pod condition reasons.
const (
	ReasonContainersNotReady       = "ContainersNotReady"
	ReasonContainersNotInitialized = "ContainersNotInitialized"
	ReasonPodCompleted             = "PodCompleted"
	ReasonPodFailed                = "PodFailed"
	ReasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
	// ReasonPodSandboxNotReady: PodReadyToStartContainers is false; the
	// message says why (podstate.SandboxChange).
	ReasonPodSandboxNotReady = "PodSandboxNotReady"
)

// IsKubeletCondition reports whether the node agent owns condition type t:
// PodScheduled, PodReadyToStartContainers, Initialized, ContainersReady,
// Ready, PodResizePending and PodResizeInProgress. Every other condition
// belongs to someone else and is kept as the API holds it.
func IsKubeletCondition(t corev1.PodConditionType) bool {
	switch t {
	case corev1.PodScheduled, corev1.PodReadyToStartContainers, corev1.PodInitialized,
		corev1.ContainersReady, corev1.PodReady:
		return true
	}
	return isResizeCondition(t)
}

// conditions returns the conditions of s: those others own, as the previous
// status had them, then the agent's own. A condition keeps its previous
// LastTransitionTime while its status does not change.
func conditions(pod *corev1.Pod, s *corev1.PodStatus, sandboxChange string, now time.Time) []corev1.PodCondition {
	prev := pod.Status.Conditions
	var out []corev1.PodCondition
	for _, c := range prev {
		// The resize conditions are carried over as they were; only the
		// sync of a running pod changes them (SetResizeConditions).
		if !IsKubeletCondition(c.Type) || isResizeCondition(c.Type) && !podutil.IsTerminal(s.Phase) {
			out = append(out, *c.DeepCopy())
		}
	}
	terminal := podutil.IsTerminal(s.Phase)

	ready := cond(corev1.PodReadyToStartContainers, true, "", "")
	if sandboxChange != "" {
		ready = cond(corev1.PodReadyToStartContainers, false, ReasonPodSandboxNotReady, sandboxChange)
	}

	init := cond(corev1.PodInitialized, true, "", "")
	if s.Phase == corev1.PodSucceeded {
		init.Reason = ReasonPodCompleted
	}
	if pending := pendingInit(pod, s.InitContainerStatuses, s.ContainerStatuses); len(pending) > 0 {
		init = cond(corev1.PodInitialized, false, ReasonContainersNotInitialized, listMessage("containers with incomplete status", pending))
	}

	crd := cond(corev1.ContainersReady, true, "", "")
	switch unready := unreadyContainers(pod, s); {
	case terminal:
		crd = cond(corev1.ContainersReady, false, terminalReason(s.Phase), "")
	case len(unready) > 0:
		crd = cond(corev1.ContainersReady, false, ReasonContainersNotReady, listMessage("containers with unready status", unready))
	}

	podReady := crd
	podReady.Type = corev1.PodReady
	if podReady.Status == corev1.ConditionTrue {
		if msgs := unreadyGates(pod, out); len(msgs) > 0 {
			podReady = cond(corev1.PodReady, false, ReasonReadinessGatesNotReady, strings.Join(msgs, ", "))
		}
	}

	scheduled := cond(corev1.PodScheduled, true, "", "")

	for _, c := range []corev1.PodCondition{ready, init, podReady, crd, scheduled} {
		c.ObservedGeneration = pod.Generation
		c.LastTransitionTime = metav1.Time{Time: now}
		for _, p := range prev {
			if p.Type == c.Type && p.Status == c.Status {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	return out
}

// terminalReason is the reason of a terminal pod's Ready and
// ContainersReady conditions: PodFailed for a Failed pod, PodCompleted for a
// Succeeded one.
func terminalReason(phase corev1.PodPhase) string {
	if phase == corev1.PodFailed {
		return ReasonPodFailed
	}
	return ReasonPodCompleted
}

func cond(t corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
	st := corev1.ConditionFalse
	if ok {
		st = corev1.ConditionTrue
	}
	return corev1.PodCondition{Type: t, Status: st, Reason: reason, Message: msg}
}

func listMessage(what string, names []string) string {
	return fmt.Sprintf("%s: [%s]", what, strings.Join(names, " "))
}

// pendingInit names the init containers that keep the pod from being
// initialized: regular init containers that have not exited 0 and sidecars
// that have not started. Once any regular container has run the pod stays
// initialized.
func pendingInit(pod *corev1.Pod, initStatuses, statuses []corev1.ContainerStatus) []string {
	if anyRegularStarted(pod, statuses) {
		return nil
	}
	var pending []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := findStatus(initStatuses, c.Name)
		var done bool
		switch {
		case cs == nil:
		case podutil.IsSidecar(c):
			done = cs.State.Running != nil && cs.Started != nil && *cs.Started
		default:
			done = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		}
		if !done {
			pending = append(pending, c.Name)
		}
	}
	return pending
}

// unreadyContainers names the sidecars and regular containers not ready.
func unreadyContainers(pod *corev1.Pod, s *corev1.PodStatus) []string {
	var out []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if !podutil.IsSidecar(c) {
			continue
		}
		if cs := findStatus(s.InitContainerStatuses, c.Name); cs == nil || !cs.Ready {
			out = append(out, c.Name)
		}
	}
	for i := range pod.Spec.Containers {
		name := pod.Spec.Containers[i].Name
		if cs := findStatus(s.ContainerStatuses, name); cs == nil || !cs.Ready {
			out = append(out, name)
		}
	}
	return out
}

// NeedsReadinessReconcile reports whether pod, as the API holds it, has
// readiness gates and a Ready condition that disagrees with them in its
// status or its message: another writer set or cleared a gate's condition
// since the agent last wrote the status, so the agent must recompute Ready
// (as upstream's kubelet does when such a status-only update arrives,
// status_manager.go NeedToReconcilePodReadiness).
func NeedsReadinessReconcile(pod *corev1.Pod) bool {
	if len(pod.Spec.ReadinessGates) == 0 {
		return false
	}
	find := func(t corev1.PodConditionType) *corev1.PodCondition {
		for i := range pod.Status.Conditions {
			if pod.Status.Conditions[i].Type == t {
				return &pod.Status.Conditions[i]
			}
		}
		return nil
	}
	ready := find(corev1.PodReady)
	if ready == nil {
		return false
	}
	wantStatus, wantMsg := corev1.ConditionFalse, ""
	switch crd := find(corev1.ContainersReady); {
	case crd == nil:
		return false
	case crd.Status != corev1.ConditionTrue:
		wantMsg = crd.Message
	default:
		if msgs := unreadyGates(pod, pod.Status.Conditions); len(msgs) > 0 {
			wantMsg = strings.Join(msgs, ", ")
		} else {
			wantStatus = corev1.ConditionTrue
		}
	}
	return ready.Status != wantStatus || ready.Message != wantMsg
}

// unreadyGates describes the readiness gates whose conditions (among those
// others own) are not True, in upstream's words.
func unreadyGates(pod *corev1.Pod, others []corev1.PodCondition) []string {
	var msgs []string
	for _, g := range pod.Spec.ReadinessGates {
		found := false
		for _, c := range others {
			if c.Type != g.ConditionType {
				continue
			}
			found = true
			if c.Status != corev1.ConditionTrue {
				msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %s", g.ConditionType, c.Status))
			}
		}
		if !found {
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		}
	}
	return msgs
}

// WithSandboxReady returns s with PodReadyToStartContainers True (the
// kubelet's OnPodSandboxReady: a new sandbox runs, its network and volumes
// are ready) for a pod at generation; the other conditions and fields are
// s's. The condition's transition time moves to now only when its status
// changes.
func WithSandboxReady(s corev1.PodStatus, generation int64, now time.Time) corev1.PodStatus {
	out := *s.DeepCopy()
	c := cond(corev1.PodReadyToStartContainers, true, "", "")
	c.ObservedGeneration = generation
	c.LastTransitionTime = metav1.Time{Time: now}
	for i, p := range out.Conditions {
		if p.Type != c.Type {
			continue
		}
		if p.Status == c.Status {
			c.LastTransitionTime = p.LastTransitionTime
		}
		out.Conditions[i] = c
		return out
	}
	out.Conditions = append(out.Conditions, c)
	return out
}
