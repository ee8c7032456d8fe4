package podstate

// Why a pod needs a new sandbox: the messages of the
// PodReadyToStartContainers condition when it is false (the upstream
// kubelet's words).
const (
	SandboxMsgNone            = "no pod sandbox exists"
	SandboxMsgMultipleReady   = "multiple pod sandboxes are ready and need to be reconciled"
	SandboxMsgNotReady        = "pod sandbox is not ready"
	SandboxMsgNetworkModeDiff = "network namespace mode changed and sandbox needs to be recreated"
	SandboxMsgNoIP            = "pod sandbox has no IP address"
)

// SandboxChange says why the pod's newest sandbox cannot host its
// containers and a new one must be created, or "" when it can: there is
// none; more than one is ready (an agent crash mid-re-creation); it is not
// ready; its network namespace mode is not the pod's (hostNetwork); or a
// pod-network sandbox has no IP (the CNI plugin failed to give it one).
func (s *PodStatus) SandboxChange(hostNetwork bool) string {
	sb, ok := s.LatestSandbox()
	if !ok {
		return SandboxMsgNone
	}
	ready := 0
	for _, o := range s.Sandboxes {
		if o.State == SandboxReady {
			ready++
		}
	}
	switch {
	case ready > 1:
		return SandboxMsgMultipleReady
	case sb.State != SandboxReady:
		return SandboxMsgNotReady
	case sb.HostNetwork != hostNetwork:
		return SandboxMsgNetworkModeDiff
	case !hostNetwork && sb.IP == "":
		return SandboxMsgNoIP
	}
	return ""
}
