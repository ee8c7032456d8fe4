package status

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Phase computes a live pod's phase from its init and regular container
// statuses:
//
//   - Failed when a (non-restartable) init container failed and may not
//     run again (podutil.ShouldRestart);
//   - Pending while initialization is incomplete and no regular container
//     has started, or while a regular container waits for its first start;
//   - Running when every regular container has started and one runs;
//   - when every regular container has stopped: Running while one of them
//     will restart (by its own restartPolicy and restartPolicyRules, else
//     the pod's), else Succeeded if all exited 0, else Failed. Running
//     sidecars count as running: a Job-like pod stays Running until they
//     are stopped.
//
// A pod being torn down reaches a terminal phase through Terminate instead.
func Phase(pod *corev1.Pod, initStatuses, statuses []corev1.ContainerStatus) corev1.PodPhase {
	return phase(pod, initStatuses, statuses, false)
}

// phase is Phase; with terminal set, the pod's containers will not be
// restarted whatever its policy, so stopped containers decide between
// Succeeded and Failed.
func phase(pod *corev1.Pod, initStatuses, statuses []corev1.ContainerStatus, terminal bool) corev1.PodPhase {
	var n phaseCounts
	n.countInit(pod, initStatuses)
	n.countRegular(pod, statuses)
	return n.decide(anyRegularStarted(pod, statuses), terminal)
}

// phaseCounts tallies a pod's containers by what they mean for its phase.
type phaseCounts struct {
	// pendingInit counts the init containers initialization still waits
	// for; failedInit the regular init containers that failed for good.
	pendingInit, failedInit int
	// unknown, running, waiting and stopped count the regular containers
	// (and sidecars: unknown, running, waiting) by state; succeeded the
	// stopped ones that exited 0; final the stopped ones that will not
	// run again (podutil.ShouldRestart: their own policy and rules, else
	// the pod's).
	unknown, running, waiting, stopped, succeeded, final int
}

// countInit tallies the init containers. A sidecar counts for
// initialization once it has started; a stopped sidecar does not hold the
// pod back.
func (n *phaseCounts) countInit(pod *corev1.Pod, statuses []corev1.ContainerStatus) {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := findStatus(statuses, c.Name)
		if podutil.IsSidecar(c) {
			n.countSidecar(cs)
			continue
		}
		switch {
		case cs == nil, cs.State.Running != nil:
			n.pendingInit++
		case cs.State.Terminated != nil:
			if code := cs.State.Terminated.ExitCode; code != 0 && !podutil.ShouldRestart(pod, c, true, code) {
				n.failedInit++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			if code := cs.LastTerminationState.Terminated.ExitCode; code != 0 && !podutil.ShouldRestart(pod, c, true, code) {
				n.failedInit++
			}
		default:
			n.pendingInit++
		}
	}
}

// countSidecar tallies a sidecar's status cs (nil: none yet).
func (n *phaseCounts) countSidecar(cs *corev1.ContainerStatus) {
	switch {
	case cs == nil:
		n.pendingInit++
		n.unknown++
	case cs.State.Running != nil:
		if cs.Started == nil || !*cs.Started {
			n.pendingInit++
		}
		n.running++
	case cs.State.Terminated != nil:
	case cs.State.Waiting != nil:
		if cs.LastTerminationState.Terminated == nil {
			n.pendingInit++
			n.waiting++
		}
	default:
		n.pendingInit++
		n.unknown++
	}
}

// countRegular tallies the regular containers.
func (n *phaseCounts) countRegular(pod *corev1.Pod, statuses []corev1.ContainerStatus) {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := findStatus(statuses, c.Name)
		switch {
		case cs == nil:
			n.unknown++
		case cs.State.Running != nil:
			n.running++
		case cs.State.Terminated != nil:
			n.stopped++
			if cs.State.Terminated.ExitCode == 0 {
				n.succeeded++
			}
			if !podutil.ShouldRestart(pod, c, false, cs.State.Terminated.ExitCode) {
				n.final++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			n.stopped++
			if !podutil.ShouldRestart(pod, c, false, cs.LastTerminationState.Terminated.ExitCode) {
				n.final++
			}
		case cs.State.Waiting != nil:
			n.waiting++
		default:
			n.unknown++
		}
	}
}

// decide is the phase the counts give; regularStarted says whether a
// regular container has ever run, terminal as for phase.
func (n *phaseCounts) decide(regularStarted, terminal bool) corev1.PodPhase {
	switch {
	case n.failedInit > 0:
		return corev1.PodFailed
	case n.pendingInit > 0 && !regularStarted, n.waiting > 0:
		return corev1.PodPending
	case n.running > 0 && n.unknown == 0:
		return corev1.PodRunning
	case n.running > 0 || n.stopped == 0 || n.unknown > 0:
		return corev1.PodPending
	case !terminal && n.final < n.stopped: // some are restarting
		return corev1.PodRunning
	case n.stopped == n.succeeded:
		return corev1.PodSucceeded
	default:
		return corev1.PodFailed
	}
}

// anyRegularStarted reports whether some regular container has ever run.
func anyRegularStarted(pod *corev1.Pod, statuses []corev1.ContainerStatus) bool {
	for i := range pod.Spec.Containers {
		cs := findStatus(statuses, pod.Spec.Containers[i].Name)
		if cs != nil && (cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil) {
			return true
		}
	}
	return false
}
