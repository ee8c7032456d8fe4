package runtimesync

import (
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

// targetNamespace puts ephemeral container index of pod into the process
// namespace of its targetContainerName's running instance, as upstream
// does when the pod's containers each have their own process namespace
// (no shareProcessNamespace, no hostPID). Without a running target it
// keeps its own.
func targetNamespace(cfg *runtimeapi.ContainerConfig, pod *corev1.Pod, st *podstate.PodStatus, index int) {
	target := pod.Spec.EphemeralContainers[index].TargetContainerName
	if target == "" {
		return
	}
	latest, ok := st.Latest(target)
	if !ok || latest.State != podstate.ContainerRunning {
		return
	}
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns == nil || ns.Pid != runtimeapi.NamespaceMode_CONTAINER {
		return
	}
	ns.Pid = runtimeapi.NamespaceMode_TARGET
	ns.TargetId = latest.ID
}
