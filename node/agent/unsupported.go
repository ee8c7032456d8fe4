package agent

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/podworkers"
	"github.com/lockstep-dev/lockstep/node/status"
)

// checkUnsupported finds the fields of pod the agent does not honour
// (admission.Check) and sends Warning events about them whenever what it
// finds differs from what it last reported for the pod.
func (a *Agent) checkUnsupported(pod *corev1.Pod) admission.Unsupported {
	u := admission.Check(pod)
	key := strings.Join(u.Ignored, ",")
	if !a.admission.book.UnsupportedChanged(pod.UID, key) || a.d.API.Events == nil {
		return u
	}
	ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	if msg := u.WarningMessage(); msg != "" {
		a.d.API.Events.Event(ref, corev1.EventTypeWarning, admission.ReasonUnsupportedPodField, msg)
	}
	return u
}

// refuse fails a pod that must not run (see rejection): phase Failed with
// the reason and message, a Warning event, and no container is started.
func (a *Agent) refuse(pod *corev1.Pod, reason, message string) podworkers.SyncResult {
	prev := a.status.WithCachedStatus(pod)
	if prev.Status.Phase != corev1.PodFailed && a.d.API.Events != nil {
		ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
		a.d.API.Events.Event(ref, corev1.EventTypeWarning, reason, message)
	}
	// A refused pod with nothing running shows Failed at once, as
	// upstream's rejectPod: the status manager withholds a terminal phase
	// only while the pod could still have running containers (one
	// re-refused after a restart keeps it until they stopped).
	if st, _ := a.pleg.Cache().Get(pod.UID); len(st.Running()) == 0 {
		a.status.ContainersStopped(pod.UID)
	}
	a.status.SetPodStatus(pod, status.Reject(prev, reason, message, a.d.Clock.Now()))
	return podworkers.SyncResult{Terminal: true}
}

// withUnsupportedMessage names the ignored fields in the status message,
// unless the status already carries a reason or message of its own.
func withUnsupportedMessage(s corev1.PodStatus, u admission.Unsupported) corev1.PodStatus {
	if msg := u.WarningMessage(); msg != "" && s.Reason == "" && s.Message == "" {
		s.Message = msg
	}
	return s
}
