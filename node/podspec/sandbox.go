package podspec

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

const (
	// hostnameMaxLen is the longest hostname the kernel takes (64 bytes
	// with the terminating NUL).
	hostnameMaxLen = 63
	// fqdnMaxLen is the longest FQDN used as a hostname.
	fqdnMaxLen = 64
)

// SandboxConfig returns the config of a pod's sandbox; attempt counts the
// sandboxes created for the pod before this one.
//
// The sandbox carries: metadata (name, namespace, UID, attempt); the
// hostname (pod.Spec.Hostname or the pod name, truncated to 63 characters,
// as FQDN with setHostnameAsFQDN; empty for host-network pods, whose UTS
// namespace is the node's); the pod's log directory; DNS per dnsPolicy (see
// dnsConfig); port mappings of every regular container's ports; labels
// (the pod's, overridden by podstate.SandboxLabels) and the pod's
// annotations; the pod's security context (see sandboxSecurityContext).
// the pod's sysctls, names with '.' separators (admission has checked
// they are allowed); the pod's resources and overhead (SandboxResources);
// cgroupParent, the pod's cgroup that the runtime puts the sandbox and its
// containers under ("" leaves them where the runtime likes).
func SandboxConfig(pod *corev1.Pod, attempt uint32, node NodeInfo, cgroupParent string) (*runtimeapi.PodSandboxConfig, error) {
	ref := RefOf(pod)
	sc, err := sandboxSecurityContext(pod)
	if err != nil {
		return nil, &SandboxConfigError{Pod: podName(pod), Cause: err}
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		LogDirectory: LogDirectory(node.PodLogsRoot, ref),
		Labels:       sandboxLabels(pod, ref),
		Annotations:  maps.Clone(pod.Annotations),
		PortMappings: portMappings(pod),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{CgroupParent: cgroupParent, SecurityContext: sc, Sysctls: sandboxSysctls(pod)},
	}
	cfg.Linux.Resources, cfg.Linux.Overhead = SandboxResources(pod, node)
	if !pod.Spec.HostNetwork {
		hostname, err := podHostname(pod, node.ClusterDomain)
		if err != nil {
			return nil, &SandboxConfigError{Pod: podName(pod), Cause: err}
		}
		cfg.Hostname = hostname
	}
	dns, err := dnsConfig(pod, node)
	if err != nil {
		return nil, &SandboxConfigError{Pod: podName(pod), Cause: err}
	}
	cfg.DnsConfig = dns
	return cfg, nil
}

// SandboxConfigError is why a pod's sandbox config cannot be built:
// Cause, worded as the kubelet words it (a FailedCreatePodSandBox event
// carries it alone), for the pod named.
type SandboxConfigError struct {
	Pod   string
	Cause error
}

// Error names the pod and the cause.
func (e *SandboxConfigError) Error() string {
	return fmt.Sprintf("sandbox of pod %s: %v", e.Pod, e.Cause)
}

// Unwrap returns the cause.
func (e *SandboxConfigError) Unwrap() error { return e.Cause }

// sandboxLabels returns the pod's labels with the agent's own on top.
func sandboxLabels(pod *corev1.Pod, ref podstate.PodRef) map[string]string {
	labels := make(map[string]string, len(pod.Labels)+4)
	maps.Copy(labels, pod.Labels)
	maps.Copy(labels, podstate.SandboxLabels(ref))
	return labels
}

// podHostname returns the hostname the kernel gives the pod: the pod's
// hostname (or name) cut to 63 characters without a trailing '-' or '.',
// or hostname.subdomain.namespace.svc.clusterDomain when the pod asks for
// its FQDN as hostname.
func podHostname(pod *corev1.Pod, clusterDomain string) (string, error) {
	hostname, domain, err := hostnameAndDomain(pod, clusterDomain)
	if err != nil || domain == "" || pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN {
		return hostname, err
	}
	fqdn := hostname + "." + domain
	if len(fqdn) > fqdnMaxLen && !ignoreFQDNLimit {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)",
			fqdn, fqdnMaxLen, len(fqdn))
	}
	return fqdn, nil
}

// hostnameAndDomain returns the pod's short hostname (its hostname or
// name, cut to 63 characters without a trailing '-' or '.') and its
// domain, subdomain.namespace.svc.clusterDomain ("" without a
// subdomain), as upstream's GeneratePodHostNameAndDomain. A
// hostnameOverride (a DNS subdomain, cut the same way) replaces both: the
// pod then has that hostname and no domain, whatever its subdomain.
func hostnameAndDomain(pod *corev1.Pod, clusterDomain string) (string, string, error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if msgs := validation.IsDNS1123Subdomain(*o); len(msgs) != 0 {
			return "", "", fmt.Errorf("hostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(msgs, "; "))
		}
		hostname, err := truncateHostname(*o)
		return hostname, "", err
	}
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) != 0 {
			return "", "", fmt.Errorf("hostname %q is not a valid DNS label: %s", pod.Spec.Hostname, strings.Join(msgs, "; "))
		}
		hostname = pod.Spec.Hostname
	}
	hostname, err := truncateHostname(hostname)
	if err != nil {
		return "", "", err
	}
	if pod.Spec.Subdomain == "" {
		return hostname, "", nil
	}
	if msgs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(msgs) != 0 {
		return "", "", fmt.Errorf("subdomain %q is not a valid DNS label: %s", pod.Spec.Subdomain, strings.Join(msgs, "; "))
	}
	return hostname, fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain), nil
}

// truncateHostname cuts hostname to 63 characters, dropping a trailing
// '-' or '.' the cut leaves.
func truncateHostname(hostname string) (string, error) {
	if len(hostname) <= hostnameMaxLen {
		return hostname, nil
	}
	cut := strings.TrimRight(hostname[:hostnameMaxLen], "-.")
	if cut == "" {
		return "", fmt.Errorf("hostname %q cannot be truncated to a valid one", hostname)
	}
	return cut, nil
}

// portMappings lists the ports of the pod's regular containers, in spec
// order. A container naming the same port twice (same name, or for unnamed
// ports the same family, protocol, host IP, container and host port) gets
// it once.
func portMappings(pod *corev1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	for i := range pod.Spec.Containers {
		seen := map[string]bool{}
		for _, p := range pod.Spec.Containers[i].Ports {
			key := p.Name
			if key == "" {
				key = fmt.Sprintf("%s-%s-%s:%d:%d", ipFamily(p.HostIP), p.Protocol, p.HostIP, p.ContainerPort, p.HostPort)
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, &runtimeapi.PortMapping{
				Protocol:      runtimeProtocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return out
}

// ipFamily names the address family a host IP binds ("any" when unset).
func ipFamily(ip string) string {
	switch {
	case ip == "":
		return "any"
	case strings.Contains(ip, ":"):
		return "v6"
	}
	return "v4"
}

// runtimeProtocol maps a port protocol to the CRI's (TCP when unset).
func runtimeProtocol(p corev1.Protocol) runtimeapi.Protocol {
	switch p {
	case corev1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case corev1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

// namespaceOptions says which Linux namespaces the pod shares with the node:
// network for hostNetwork, IPC for hostIPC, PID for hostPID. Otherwise
// network and IPC are the pod's, and PID is per container unless the pod
// shares its process namespace. The user namespace is the node's (mode
// NODE, as upstream sends it since user namespaces are on by default)
// unless the pod sets hostUsers: false; then it is left nil here, and the
// executor sets the pod's own with its mappings (SetUserNamespace).
func namespaceOptions(pod *corev1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if !WantsUserNamespace(pod) {
		ns.UsernsOptions = &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

// WantsUserNamespace reports whether a pod asks for a user namespace of
// its own (hostUsers: false).
func WantsUserNamespace(pod *corev1.Pod) bool {
	return pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers
}

// SetUserNamespace puts a pod's own user namespace into the namespace
// options of its sandbox's or one of its containers' config (either may
// be nil).
func SetUserNamespace(sb *runtimeapi.PodSandboxConfig, c *runtimeapi.ContainerConfig, ns *runtimeapi.UserNamespace) {
	if opts := sb.GetLinux().GetSecurityContext().GetNamespaceOptions(); opts != nil {
		opts.UsernsOptions = ns
	}
	if opts := c.GetLinux().GetSecurityContext().GetNamespaceOptions(); opts != nil {
		opts.UsernsOptions = ns
	}
}

// sandboxSysctls returns the pod's sysctls by name, written with '.'
// separators as the runtime expects them; a name set twice takes its last
// value.
func sandboxSysctls(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	if pod.Spec.SecurityContext == nil {
		return out
	}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		out[podutil.NormalizeSysctl(s.Name)] = s.Value
	}
	return out
}
