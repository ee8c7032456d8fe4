package runtimesync

import corev1 "k8s.io/api/core/v1"

// cgroupParent is the pod cgroup the pod's sandbox goes under ("" without
// a cgroup manager).
func (e *Executor) cgroupParent(pod *corev1.Pod) string {
	if e.cfg.CgroupParent == nil {
		return ""
	}
	return e.cfg.CgroupParent(pod)
}
