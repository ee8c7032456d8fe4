package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

// Reject returns the status of a pod that failed admission and will never
// run: phase Failed with reason and message, no container statuses (none
// ever ran), Ready and ContainersReady False with reason PodFailed. pod
// carries the previous status (Manager.WithCachedStatus), whose start time,
// addresses and foreign conditions are kept.
func Reject(pod *corev1.Pod, reason, message string, node NodeAddrs, now time.Time) corev1.PodStatus {
	s := Generate(pod, nil, nil, nil, node, now)
	s.Phase, s.Reason, s.Message = corev1.PodFailed, reason, message
	s.InitContainerStatuses, s.ContainerStatuses = nil, nil
	s.Conditions = conditions(pod, &s, podstate.SandboxMsgNone, now)
	return s
}
