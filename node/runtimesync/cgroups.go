package runtimesync

import (
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// cgroupParent is the pod cgroup the pod's sandbox goes under ("" without
// a cgroup manager).
func (e *Executor) cgroupParent(pod *corev1.Pod) string {
	if e.cfg.CgroupParent == nil {
		return ""
	}
	return e.cfg.CgroupParent(pod)
}

// pinCPUs sets the cpuset the CPU and memory managers give a new
// container.
func (e *Executor) pinCPUs(pod *corev1.Pod, cfg *runtimeapi.ContainerConfig) {
	if e.cfg.ContainerCPUSet == nil {
		return
	}
	cpus, mems := e.cfg.ContainerCPUSet(pod, cfg.GetMetadata().GetName())
	if cpus == "" && mems == "" {
		return
	}
	if cfg.Linux == nil {
		cfg.Linux = &runtimeapi.LinuxContainerConfig{}
	}
	if cfg.Linux.Resources == nil {
		cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{}
	}
	if cpus != "" {
		cfg.Linux.Resources.CpusetCpus = cpus
	}
	if mems != "" {
		cfg.Linux.Resources.CpusetMems = mems
	}
}
