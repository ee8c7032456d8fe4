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

// pinCPUs sets the cpuset the CPU manager gives a new container.
func (e *Executor) pinCPUs(pod *corev1.Pod, cfg *runtimeapi.ContainerConfig) {
	if e.cfg.ContainerCPUs == nil {
		return
	}
	cpus := e.cfg.ContainerCPUs(pod, cfg.GetMetadata().GetName())
	if cpus == "" {
		return
	}
	if cfg.Linux == nil {
		cfg.Linux = &runtimeapi.LinuxContainerConfig{}
	}
	if cfg.Linux.Resources == nil {
		cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{}
	}
	cfg.Linux.Resources.CpusetCpus = cpus
}
