package status

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Phase computes a live pod's phase from its init and regular container
// statuses:
//
//   - Failed when a (non-restartable) init container failed under
//     restartPolicy Never;
//   - Pending while initialization is incomplete and no regular container
//     has started, or while a regular container waits for its first start;
//   - Running when every regular container has started and one runs;
//   - when every regular container has stopped: Running under Always
//     (restarting), Succeeded if all exited 0, Failed under Never, Running
//     under OnFailure (the failed ones restart).
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
	var unknown, running, waiting, stopped, succeeded int

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
			if cs.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case cs.State.Waiting != nil:
			if t := cs.LastTerminationState.Terminated; t != nil {
				if t.ExitCode != 0 {
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
		cs := findStatus(statuses, spec.Containers[i].Name)
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
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}

	if failedInit > 0 && spec.RestartPolicy == corev1.RestartPolicyNever {
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
		case spec.RestartPolicy == corev1.RestartPolicyAlways || spec.RestartPolicy == "":
			return corev1.PodRunning
		case stopped == succeeded:
			return corev1.PodSucceeded
		case spec.RestartPolicy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		default: // OnFailure: the failed ones are restarting.
			return corev1.PodRunning
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
