package status

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Terminate returns status s of a pod whose containers have all stopped
// for good: every container that started and is not terminated is reported
// terminated — with the termination it last recorded when it was waiting to
// restart, else with ExitCodeUnknown and podutil.ReasonContainerStatusUnknown (see
// finalizeAll for which ones count as started) — and the phase becomes
// terminal (Succeeded if every regular container exited 0, else Failed).
// A terminal phase is kept as it is. Static pods keep their live phase, as
// their manifest may run them again. Ready and ContainersReady turn False
// with reason PodFailed or PodCompleted.
func Terminate(pod *corev1.Pod, s corev1.PodStatus, now time.Time) corev1.PodStatus {
	out := *s.DeepCopy()
	out.InitContainerStatuses = complete(pod.Spec.InitContainers, out.InitContainerStatuses)
	out.ContainerStatuses = complete(pod.Spec.Containers, out.ContainerStatuses)
	finalizeAll(pod, &out, &s)
	if !podutil.IsTerminal(out.Phase) {
		p := phase(pod, out.InitContainerStatuses, out.ContainerStatuses, !podutil.IsStaticPod(pod))
		if !podutil.IsTerminal(p) && !podutil.IsStaticPod(pod) {
			p = corev1.PodFailed
		}
		if p != out.Phase {
			out.Reason, out.Message = "", ""
		}
		out.Phase = p
	}
	if podutil.IsTerminal(out.Phase) {
		for i := range out.Conditions {
			c := &out.Conditions[i]
			if c.Type != corev1.PodReady && c.Type != corev1.ContainersReady {
				continue
			}
			if c.Status != corev1.ConditionFalse {
				c.LastTransitionTime.Time = now
			}
			c.Status, c.Reason, c.Message = corev1.ConditionFalse, terminalReason(out.Phase), ""
		}
		if c := findCondition(out.Conditions, corev1.PodInitialized); c != nil && out.Phase == corev1.PodSucceeded && c.Status == corev1.ConditionTrue {
			c.Reason = ReasonPodCompleted
		}
	}
	return out
}

// findCondition returns the condition of type t in conds, if any.
func findCondition(conds []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// complete adds a waiting status for each spec container that has none, in
// spec order, so that Terminate reports every container.
func complete(specs []corev1.Container, list []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(specs) == 0 {
		return list
	}
	out := make([]corev1.ContainerStatus, 0, len(specs))
	for i := range specs {
		if cs := findStatus(list, specs[i].Name); cs != nil {
			out = append(out, *cs)
			continue
		}
		out = append(out, corev1.ContainerStatus{
			Name:  specs[i].Name,
			Image: specs[i].Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: podutil.ReasonContainerCreating}},
		})
	}
	return out
}

// finalizeAll reports terminated, in s, the containers of a pod that ended
// whose final state must show; prev is the status the pod had before,
// whose terminations are kept. As upstream, a container that never started
// is not made up a termination: regular containers are finalized only once
// the pod has initialized, and init containers only up to the last one that
// started (always the first, as upstream); the others stay waiting.
func finalizeAll(pod *corev1.Pod, s *corev1.PodStatus, prev *corev1.PodStatus) {
	started := startedInitPrefix(s.InitContainerStatuses)
	initialized := hasInitialized(pod, s)
	for i := range s.InitContainerStatuses {
		cs := &s.InitContainerStatuses[i]
		if i < started {
			finalize(cs, findStatus(prev.InitContainerStatuses, cs.Name))
		}
		cs.Started = ptr(false)
		t := cs.State.Terminated
		cs.Ready = t != nil && t.ExitCode == 0 && !isSidecarNamed(pod, cs.Name)
	}
	for i := range s.ContainerStatuses {
		cs := &s.ContainerStatuses[i]
		if initialized {
			finalize(cs, findStatus(prev.ContainerStatuses, cs.Name))
		}
		cs.Started = ptr(false)
		cs.Ready = false
	}
	for i := range s.EphemeralContainerStatuses {
		cs := &s.EphemeralContainerStatuses[i]
		if cs.State.Waiting == nil {
			finalize(cs, findStatus(prev.EphemeralContainerStatuses, cs.Name))
		}
		cs.Started = nil
		cs.Ready = false
	}
}

// hasInitialized reports whether a pod got past its init containers: it has
// none, a regular container left the waiting state (or has a past
// termination), or its last init container completed (a sidecar: started).
func hasInitialized(pod *corev1.Pod, s *corev1.PodStatus) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, cs := range s.ContainerStatuses {
		if cs.State.Waiting == nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	last := &pod.Spec.InitContainers[len(pod.Spec.InitContainers)-1]
	cs := findStatus(s.InitContainerStatuses, last.Name)
	switch {
	case cs == nil:
		return false
	case podutil.IsSidecar(last):
		return cs.State.Running != nil && cs.Started != nil && *cs.Started
	}
	for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
		if t != nil && t.ExitCode == 0 {
			return true
		}
	}
	return false
}

// startedInitPrefix is how many init container statuses, from the first,
// reach the last one with evidence of a start (not waiting, or a past
// termination); at least one when there are any.
func startedInitPrefix(list []corev1.ContainerStatus) int {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].State.Waiting == nil || list[i].LastTerminationState.Terminated != nil {
			return i + 1
		}
	}
	return min(len(list), 1)
}

func isSidecarNamed(pod *corev1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return podutil.IsSidecar(&pod.Spec.InitContainers[i])
		}
	}
	return false
}

// finalize makes cs terminated: a waiting container with the termination it
// waits to restart from, else with the one old recorded; a running or
// never-finished one as unknown (137).
func finalize(cs *corev1.ContainerStatus, old *corev1.ContainerStatus) {
	if cs.State.Terminated != nil {
		return
	}
	switch {
	case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
		cs.State = corev1.ContainerState{Terminated: cs.LastTerminationState.Terminated}
		cs.LastTerminationState = corev1.ContainerState{}
	case cs.State.Waiting != nil && old != nil && old.State.Terminated != nil:
		cs.State = corev1.ContainerState{Terminated: old.State.Terminated.DeepCopy()}
	default:
		t := &corev1.ContainerStateTerminated{
			ExitCode:    ExitCodeUnknown,
			Reason:      podutil.ReasonContainerStatusUnknown,
			Message:     MessageUnknownAtTermination,
			ContainerID: cs.ContainerID,
		}
		if r := cs.State.Running; r != nil {
			t.StartedAt = r.StartedAt
		}
		cs.State = corev1.ContainerState{Terminated: t}
	}
}

// checkTransition refuses a status change that no sync may make: leaving a
// terminal phase (or switching between the two terminal phases), and a
// container leaving the terminated state when its restart policy forbids
// running it again.
func checkTransition(pod *corev1.Pod, old, next *corev1.PodStatus) error {
	if podutil.IsTerminal(old.Phase) && next.Phase != old.Phase {
		return fmt.Errorf("pod %s/%s: phase %s is final, refusing %s", pod.Namespace, pod.Name, old.Phase, next.Phase)
	}
	if pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || pod.Spec.RestartPolicy == "" {
		// A new sandbox runs even completed init containers again.
		return nil
	}
	check := func(specs []corev1.Container, olds, nexts []corev1.ContainerStatus, init bool) error {
		for i := range specs {
			c := &specs[i]
			o := findStatus(olds, c.Name)
			if o == nil || o.State.Terminated == nil || podutil.ShouldRestart(pod, c, init, o.State.Terminated.ExitCode) {
				continue
			}
			if n := findStatus(nexts, c.Name); n != nil && n.State.Terminated == nil {
				return fmt.Errorf("pod %s/%s: container %q terminated and may not restart under restartPolicy %s",
					pod.Namespace, pod.Name, c.Name, pod.Spec.RestartPolicy)
			}
		}
		return nil
	}
	if err := check(pod.Spec.InitContainers, old.InitContainerStatuses, next.InitContainerStatuses, true); err != nil {
		return err
	}
	return check(pod.Spec.Containers, old.ContainerStatuses, next.ContainerStatuses, false)
}
