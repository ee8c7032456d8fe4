// Package podspec translates a pod's spec into the CRI v1 configs the
// runtime is asked to create: the PodSandboxConfig of a pod and the
// ContainerConfig of each container instance. Everything here is a pure
// function of the pod, the node's facts (NodeInfo) and the per-instance
// inputs (ContainerOptions): no I/O, no clock, no state, so the same inputs
// always give the same configs, in the real world and in the simulator.
//
// What is translated follows the upstream kubelet's behaviour: command and
// args with $(VAR) expansion, environment (values, downward-API fieldRef and
// resourceFieldRef), working directory, ports, Linux resources and OOM
// score, log paths, labels and annotations, hostname, host namespaces and
// DNS, the pod's and containers' security contexts (security.go) and
// volume mounts (mounts.go: volumeMounts to CRI mounts below the pod volume
// layout the volume manager keeps).
package podspec

import (
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

// DefaultPodLogsRoot is where pod log directories live when
// NodeInfo.PodLogsRoot is empty.
const DefaultPodLogsRoot = "/var/log/pods"

// DefaultContainerLogsDir is where the container log symlinks live when
// NodeInfo.ContainerLogsDir is empty (the directory log shippers tail).
const DefaultContainerLogsDir = "/var/log/containers"

// NodeInfo is what the node contributes to configs. The zero value is
// usable; each field says what its absence means.
type NodeInfo struct {
	// NodeName is used for spec.nodeName when the pod does not carry it.
	NodeName string
	// HostIP is the node's primary IP (downward API status.hostIP; the
	// pod IP of host-network pods).
	HostIP string
	// HostIPs are all the node's IPs, primary first (status.hostIPs).
	// Empty means just HostIP.
	HostIPs []string
	// ClusterDNS are the cluster DNS server IPs for ClusterFirst pods.
	// Empty makes ClusterFirst fall back to Default, as upstream does.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (e.g. cluster.local).
	ClusterDomain string
	// ResolverConfig is the path of the host resolv.conf the Default DNS
	// policy inherits. Empty means "no host resolver": Default pods get a
	// localhost nameserver and search "." (the upstream kubelet's
	// behaviour for --resolv-conf=""). Its parsed content is HostDNS.
	ResolverConfig string
	// HostDNS is ResolverConfig's content (see ParseResolvConf), the base
	// of the Default and ClusterFirst policies. The caller reads the file;
	// left empty with ResolverConfig set, Default pods get an empty
	// DNSConfig, which makes the runtime copy its own host resolv.conf.
	HostDNS ResolvConf
	// PodLogsRoot is the parent of every pod's log directory; empty means
	// DefaultPodLogsRoot.
	PodLogsRoot string
	// RootDir is the agent's root directory, where pods' volumes live
	// (see PodDir); empty means DefaultRootDir.
	RootDir string
	// ContainerLogsDir holds a symlink to every container instance's log
	// (see ContainerLogSymlink); empty means DefaultContainerLogsDir.
	ContainerLogsDir string
	// MemoryCapacity is the node's memory in bytes, the denominator of a
	// Burstable container's OOM score. Zero (unknown) scores every
	// Burstable container 999.
	MemoryCapacity int64
	// Allocatable is the node's allocatable resources: a resourceFieldRef
	// to a limit the container does not set reads the node's allocatable
	// amount instead, as upstream does.
	Allocatable corev1.ResourceList
	// HugePageSizes are the node's huge page sizes in bytes, smallest
	// first (deps.MachineInfo.HugePages): every container gets a hugetlb
	// limit for each, 0 unless it or its pod asks for that size.
	HugePageSizes []uint64
	// CgroupV2 says the node runs cgroup v2, where the unified settings
	// memory.high and memory.oom.group apply.
	CgroupV2 bool
	// SingleProcessOOMKill, on cgroup v2, leaves memory.oom.group unset,
	// so that an OOM kills one process rather than the whole container
	// (the kubelet's singleProcessOOMKill; cgroup v1 always behaves so).
	SingleProcessOOMKill bool
	// SeccompDefault makes RuntimeDefault the seccomp profile of containers
	// that name none (the kubelet's --seccomp-default); false leaves them
	// Unconfined.
	SeccompDefault bool
	// SeccompProfileRoot is the directory of Localhost seccomp profiles;
	// empty means DefaultSeccompProfileRoot.
	SeccompProfileRoot string
	// ThermalThrottlePaths are the node's
	// /sys/devices/system/cpu/cpu<N>/thermal_throttle directories that
	// exist, masked in every container after the default masked paths, as
	// upstream does. The caller finds them; empty masks none.
	ThermalThrottlePaths []string
	// HostsFile is the node's hosts file, which host-network pods' managed
	// hosts files copy; empty means DefaultNodeHostsFile.
	HostsFile string
}

// hostIPs returns the node's IPs, primary first.
func (n NodeInfo) hostIPs() []string {
	if len(n.HostIPs) > 0 {
		return n.HostIPs
	}
	if n.HostIP != "" {
		return []string{n.HostIP}
	}
	return nil
}

// primaryHostIP returns the node's primary IP ("" when unknown).
func (n NodeInfo) primaryHostIP() string {
	if n.HostIP != "" {
		return n.HostIP
	}
	if len(n.HostIPs) > 0 {
		return n.HostIPs[0]
	}
	return ""
}

// ContainerOptions is what the rest of the agent contributes to one
// container instance's config (see ContainerConfigWith). It is the seam for
// what comes later: volume mounts and devices (volume manager),
// configMap/secret values and service environment variables will be added
// here as fields, leaving the functions' signatures as they are.
type ContainerOptions struct {
	// RestartCount is the new instance's attempt number: 0 for the first
	// instance of the container in this pod, then one more per restart.
	RestartCount int
	// PodIPs are the sandbox's IPs, from its status. For a host-network pod
	// an empty list means the node's IPs, as upstream reports them.
	PodIPs []string
	// ImageRef is the image ID the image manager resolved for c.Image.
	// Empty sends c.Image to the runtime as written.
	ImageRef string
	// ConfigMaps and Secrets are the objects of the pod's namespace that
	// the container's environment reads (EnvSources), by name; a name
	// missing from the map was not found.
	ConfigMaps map[string]*corev1.ConfigMap
	Secrets    map[string]*corev1.Secret
	// EnvFiles are the files the env's fileKeyRefs name, by EnvFileKey,
	// read from their volumes' host directories; a key missing from the
	// map is a volume the pod does not have on the host.
	EnvFiles map[string]EnvFile
	// ServiceEnv are the service environment variables (see ServiceEnv).
	ServiceEnv map[string]string
	// ImageUser is the user the image runs as (from ImageStatus), used
	// when no runAsUser is set; the zero value means root.
	ImageUser ImageUser
	// TerminationLog is the host file (TerminationLogPath) bind-mounted at
	// the container's terminationMessagePath; "" mounts none.
	TerminationLog string
}

// RefOf returns the identity of a pod as the runtime labels record it.
func RefOf(pod *corev1.Pod) podstate.PodRef {
	return podstate.PodRef{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
}

// LogDirectory returns the directory holding a pod's container logs:
// <podLogsRoot>/<namespace>_<name>_<uid> (podLogsRoot "" means
// DefaultPodLogsRoot). It takes a PodRef so that cleanup can compute it
// from runtime labels alone.
func LogDirectory(podLogsRoot string, ref podstate.PodRef) string {
	if podLogsRoot == "" {
		podLogsRoot = DefaultPodLogsRoot
	}
	return filepath.Join(podLogsRoot, fmt.Sprintf("%s_%s_%s", ref.Namespace, ref.Name, ref.UID))
}

// ContainerLogPath returns a container instance's log file,
// "<name>/<restartCount>.log", relative to the sandbox's LogDirectory.
func ContainerLogPath(name string, restartCount int) string {
	return fmt.Sprintf("%s/%d.log", name, restartCount)
}

// ContainerLogFile returns the absolute path of a container instance's
// log file (LogDirectory joined with ContainerLogPath).
func ContainerLogFile(podLogsRoot string, ref podstate.PodRef, name string, restartCount int) string {
	return filepath.Join(LogDirectory(podLogsRoot, ref), ContainerLogPath(name, restartCount))
}

// maxFileName is the longest file name ext4 allows.
const maxFileName = 255

// ContainerLogSymlink returns the symlink log shippers tail for a
// container instance: <dir>/<pod>_<namespace>_<container>-<containerID>.log
// (dir "" means DefaultContainerLogsDir), cut to the longest file name
// ext4 allows, as the upstream kubelet names it.
func ContainerLogSymlink(dir string, ref podstate.PodRef, container, containerID string) string {
	if dir == "" {
		dir = DefaultContainerLogsDir
	}
	const suffix = ".log"
	name := fmt.Sprintf("%s_%s_%s-%s", ref.Name, ref.Namespace, container, containerID)
	if len(name) > maxFileName-len(suffix) {
		name = name[:maxFileName-len(suffix)]
	}
	return filepath.Join(dir, name+suffix)
}

// podName names a pod in errors.
func podName(pod *corev1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}
