package refmodel

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// AppArmorReason and AppArmorMessage are the status reason and message
// (the kubelet's rejectPod prefixes "Pod was rejected: ") of
// a pod the kubelet refuses because it asks for AppArmor on a host
// without it (pkg/kubelet/lifecycle's AppArmor admit handler over
// pkg/security/apparmor's host check).
const (
	AppArmorReason  = "AppArmor"
	AppArmorMessage = "Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host"
)

// AsksForAppArmor reports whether the kubelet's AppArmor admission
// considers that pod asks for confinement (pkg/security/apparmor
// isRequired): an appArmorProfile other than Unconfined on the pod or on
// any init, regular or ephemeral container, or an annotation
// container.apparmor.security.beta.kubernetes.io/<name> whose value is
// not "unconfined".
func AsksForAppArmor(pod *corev1.Pod) bool {
	confining := func(p *corev1.AppArmorProfile) bool { return p != nil && p.Type != "Unconfined" }
	if pod.Spec.SecurityContext != nil && confining(pod.Spec.SecurityContext.AppArmorProfile) {
		return true
	}
	var contexts []*corev1.SecurityContext
	for _, c := range pod.Spec.InitContainers {
		contexts = append(contexts, c.SecurityContext)
	}
	for _, c := range pod.Spec.Containers {
		contexts = append(contexts, c.SecurityContext)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		contexts = append(contexts, c.SecurityContext)
	}
	for _, sc := range contexts {
		if sc != nil && confining(sc.AppArmorProfile) {
			return true
		}
	}
	for key, value := range pod.Annotations {
		if strings.HasPrefix(key, "container.apparmor.security.beta.kubernetes.io/") && value != "unconfined" {
			return true
		}
	}
	return false
}
