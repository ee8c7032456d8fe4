package admission

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// ReasonAppArmor is the reason of a pod refused because it asks for an
// AppArmor profile the node cannot enforce.
const ReasonAppArmor = "AppArmor"

// AppArmorNotEnabledMessage is the status message of a pod refused because
// the host has no AppArmor (the kubelet's text).
const AppArmorNotEnabledMessage = "Cannot enforce AppArmor: AppArmor is not enabled on the host"

// AdmitAppArmor is the kubelet's AppArmor admission: a pod still Pending
// that asks for AppArmor confinement (podspec.NeedsAppArmor) is refused
// when the host has none (hostAppArmor false). A pod already running or
// terminated is not checked again, nor is one that asks for nothing.
func AdmitAppArmor(pod *corev1.Pod, hostAppArmor bool) Decision {
	if hostAppArmor || ignoreAppArmor || !podspec.NeedsAppArmor(pod) || (pod.Status.Phase != "" && pod.Status.Phase != corev1.PodPending) {
		return Decision{}
	}
	return Decision{Reason: ReasonAppArmor, Message: AppArmorNotEnabledMessage}
}
