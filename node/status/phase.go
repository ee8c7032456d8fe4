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
	spec := &pod.Spec
	pendingInit, failedInit := 0, 0
	// final counts the stopped regular containers that will not run
	// again (podutil.ShouldRestart: their own policy and rules, else the
	// pod's).
	var unknown, running, waiting, stopped, succeeded, final int

	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		cs := findStatus(initStatuses, c.Name)
		if podutil.IsSidecar(c) {
			// A sidecar counts for initialization once it has started; a
			// stopped sidecar does not hold the pod back.
			switch {
			case cs == nil:
				pendingInit++
				unknown++
			case cs.State.Running != nil:
				if cs.Started == nil || !*cs.Started {
					pendingInit++
				}
				running++
			case cs.State.Terminated != nil:
			case cs.State.Waiting != nil:
				if cs.LastTerminationState.Terminated == nil {
					pendingInit++
					waiting++
				}
			default:
				pendingInit++
				unknown++
			}
			continue
		}
		switch {
		case cs == nil:
			pendingInit++
		case cs.State.Running != nil:
			pendingInit++
		case cs.State.Terminated != nil:
			if code := cs.State.Terminated.ExitCode; code != 0 && !podutil.ShouldRestart(pod, c, true, code) {
				failedInit++
			}
		case cs.State.Waiting != nil:
			if t := cs.LastTerminationState.Terminated; t != nil {
				if t.ExitCode != 0 && !podutil.ShouldRestart(pod, c, true, t.ExitCode) {
					failedInit++
				}
			} else {
				pendingInit++
			}
		default:
			pendingInit++
		}
	}

	for i := range spec.Containers {
		c := &spec.Containers[i]
		cs := findStatus(statuses, c.Name)
		switch {
		case cs == nil:
			unknown++
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
			if !podutil.ShouldRestart(pod, c, false, cs.State.Terminated.ExitCode) {
				final++
			}
		case cs.State.Waiting != nil:
			if t := cs.LastTerminationState.Terminated; t != nil {
				stopped++
				if !podutil.ShouldRestart(pod, c, false, t.ExitCode) {
					final++
				}
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}

	if failedInit > 0 {
		return corev1.PodFailed
	}
	switch {
	case pendingInit > 0 && !anyRegularStarted(pod, statuses), waiting > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if terminal {
			if stopped == succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		switch {
		case final < stopped: // some are restarting
			return corev1.PodRunning
		case stopped == succeeded:
			return corev1.PodSucceeded
		default:
			return corev1.PodFailed
		}
	default:
		return corev1.PodPending
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
