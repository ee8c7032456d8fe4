package runtimesync

import (
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

// targetID is the running instance of the targetContainerName of
// ephemeral container index of pod, whose process namespace it joins;
// "" when it names none or that one does not run.
func targetID(pod *corev1.Pod, st *podstate.PodStatus, index int) string {
	target := pod.Spec.EphemeralContainers[index].TargetContainerName
	if target == "" {
		return ""
	}
	latest, ok := st.Latest(target)
	if !ok || latest.State != podstate.ContainerRunning {
		return ""
	}
	return latest.ID
}

// joinTarget puts an ephemeral container's config into the process
// namespace of container instance target, as upstream does when the
// pod's containers each have their own process namespace (no
// shareProcessNamespace, no hostPID). With no target ("") it keeps its
// own.
func joinTarget(cfg *runtimeapi.ContainerConfig, target string) {
	if target == "" {
		return
	}
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns == nil || ns.Pid != runtimeapi.NamespaceMode_CONTAINER {
		return
	}
	ns.Pid = runtimeapi.NamespaceMode_TARGET
	ns.TargetId = target
}
