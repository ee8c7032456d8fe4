package podspec

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// EtcHosts is where a container sees its hosts file.
const EtcHosts = "/etc/hosts"

// DefaultNodeHostsFile is the node's own hosts file, the base of a
// host-network pod's, when NodeInfo.HostsFile is empty.
const DefaultNodeHostsFile = "/etc/hosts"

// The first line of a kubelet-managed hosts file, as upstream writes it
// (with and without the host network).
const (
	managedHostsHeader            = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// HostsFilePath returns the host side of a pod's managed hosts file:
// <root>/pods/<uid>/etc-hosts.
func HostsFilePath(root string, uid types.UID) string {
	return filepath.Join(PodDir(root, uid), "etc-hosts")
}

// NodeHostsFile returns the path of the node's hosts file, which a
// host-network pod's managed hosts file copies.
func (n NodeInfo) NodeHostsFile() string {
	if n.HostsFile != "" {
		return n.HostsFile
	}
	return DefaultNodeHostsFile
}

// hostsMount returns the bind mount of the pod's managed hosts file at
// /etc/hosts, or nil when the container gets none: as upstream, a pod on
// the pod network gets one only once its sandbox has an IP, a host-network
// pod always, and a container that mounts a volume at /etc/hosts itself
// keeps that. The mount is writable, as upstream makes it.
func hostsMount(pod *corev1.Pod, c *corev1.Container, podIPs []string, node NodeInfo) *runtimeapi.Mount {
	if len(podIPs) == 0 && !pod.Spec.HostNetwork {
		return nil
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == EtcHosts {
			return nil
		}
	}
	return &runtimeapi.Mount{
		ContainerPath: EtcHosts,
		HostPath:      HostsFilePath(node.RootDir, pod.UID),
		Propagation:   runtimeapi.MountPropagation_PROPAGATION_PRIVATE,
	}
}

// HostsFile returns the content of the pod's managed hosts file, as
// upstream writes it. A pod on the pod network gets the localhost lines,
// then each of its IPs with "hostname.domain hostname" (just the hostname
// without a subdomain), then its hostAliases. A host-network pod gets the
// node's hosts file (nodeHosts, which the caller reads from
// NodeInfo.NodeHostsFile) under a header, then its hostAliases. The pod's
// IPs are ordered as the downward API reports them (one per family, the
// node's family first).
func HostsFile(pod *corev1.Pod, podIPs []string, node NodeInfo, nodeHosts []byte) ([]byte, error) {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		b.WriteString(managedHostsHeaderHostNetwork)
		b.Write(nodeHosts)
		b.WriteString(hostAliasLines(pod.Spec.HostAliases))
		return b.Bytes(), nil
	}
	hostname, domain, err := hostnameAndDomain(pod, node.ClusterDomain)
	if err != nil {
		return nil, fmt.Errorf("hosts file of pod %s: %w", podName(pod), err)
	}
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range sortPodIPs(podIPs, node) {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	b.WriteString(hostAliasLines(pod.Spec.HostAliases))
	return b.Bytes(), nil
}

// hostAliasLines returns the hosts file lines of hostAliases: a blank
// line and a comment, then one line per alias, its hostnames
// tab-separated ("" without aliases).
func hostAliasLines(aliases []corev1.HostAlias) string {
	if len(aliases) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.String()
}
