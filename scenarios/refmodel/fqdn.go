package refmodel

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// FQDNMaxLen is the longest FQDN the kubelet gives a pod's kernel as its
// hostname (the 64-byte nodename field).
const FQDNMaxLen = 64

// KernelFQDN returns the FQDN the kubelet would set as pod's hostname
// (pkg/kubelet GeneratePodHostNameAndDomain and util.GetNodenameForKernel):
// only for a pod in its own UTS namespace (not host network), with
// setHostnameAsFQDN, a subdomain and no hostnameOverride —
// <hostname>.<subdomain>.<namespace>.svc.<clusterDomain>, hostname being
// spec.hostname or the pod name cut to 63 bytes without trailing '-' or
// '.'; false when the pod's hostname is not an FQDN.
func KernelFQDN(pod *corev1.Pod, clusterDomain string) (string, bool) {
	s := pod.Spec
	if s.HostNetwork || s.SetHostnameAsFQDN == nil || !*s.SetHostnameAsFQDN || s.Subdomain == "" || s.HostnameOverride != nil {
		return "", false
	}
	host := pod.Name
	if s.Hostname != "" {
		host = s.Hostname
	}
	if len(host) > 63 {
		host = strings.TrimRight(host[:63], "-.")
	}
	return fmt.Sprintf("%s.%s.%s.svc.%s", host, s.Subdomain, pod.Namespace, clusterDomain), true
}

// FQDNTooLongEvent is the message of the FailedCreatePodSandBox event the
// kubelet records at each attempt to create the sandbox of a pod whose
// FQDN is longer than FQDNMaxLen (kuberuntime's "Failed to create pod
// sandbox: %v" over GetNodenameForKernel's error).
func FQDNTooLongEvent(fqdn string) string {
	return fmt.Sprintf("Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)",
		fqdn, FQDNMaxLen, len(fqdn))
}
