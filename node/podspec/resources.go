package podspec

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podutil"
)

// CPU cgroup conversions.
const (
	minCPUShares = 2
	maxCPUShares = 262144
	sharesPerCPU = 1024
	// cpuQuotaPeriod is the CFS period, in microseconds (100 ms).
	cpuQuotaPeriod = 100000
	// minCPUQuota is the smallest CFS quota the kernel accepts (1 ms).
	minCPUQuota = 1000
)

// OOM score adjustments by QoS class. Burstable containers land in
// [minBurstableOOMScoreAdj, maxBurstableOOMScoreAdj], strictly between the
// two others.
const (
	guaranteedOOMScoreAdj   = -997
	bestEffortOOMScoreAdj   = 1000
	minBurstableOOMScoreAdj = 1000 + guaranteedOOMScoreAdj
	maxBurstableOOMScoreAdj = bestEffortOOMScoreAdj - 1
)

// Pod annotations and priority that make a pod critical.
const (
	systemNodeCritical     = "system-node-critical"
	systemCriticalPriority = 2000000000
)

// effectiveRequests returns a container's requests, with each limit
// standing in for a request the container does not set. The apiserver
// defaults pods this way; doing it here too gives undefaulted pods (static
// manifests, simulated API objects) the same resources and QoS class.
func effectiveRequests(c *corev1.Container) corev1.ResourceList {
	if len(c.Resources.Limits) == 0 {
		return c.Resources.Requests
	}
	out := make(corev1.ResourceList, len(c.Resources.Requests)+len(c.Resources.Limits))
	maps.Copy(out, c.Resources.Requests)
	for name, limit := range c.Resources.Limits {
		if _, ok := out[name]; !ok {
			out[name] = limit
		}
	}
	return out
}

// QOSClass returns a pod's quality-of-service class: pod.Status.QOSClass
// when the apiserver set it (it never changes), else computed from the
// cpu and memory of its init and regular containers. BestEffort: no
// requests or limits at all. Guaranteed: every container has cpu and
// memory limits and the pod's requests equal its limits. Burstable:
// anything else. Pod-level resources are not considered yet.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true
	add := func(sum corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
		if q.Sign() <= 0 {
			return
		}
		total := sum[name]
		total.Add(q)
		sum[name] = total
	}
	containers := make([]*corev1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		containers = append(containers, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		containers = append(containers, &pod.Spec.Containers[i])
	}
	for _, c := range containers {
		req := effectiveRequests(c)
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := req[name]; ok {
				add(requests, name, q)
			}
			q, ok := c.Resources.Limits[name]
			if ok && q.Sign() > 0 {
				add(limits, name, q)
			} else {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if !guaranteed || len(requests) != len(limits) {
		return corev1.PodQOSBurstable
	}
	for name, req := range requests {
		if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
			return corev1.PodQOSBurstable
		}
	}
	return corev1.PodQOSGuaranteed
}

// linuxResources returns a container's cgroup settings:
//
//   - CpuShares: requests.cpu in millicores × 1024 / 1000, within [2, 262144]
//     (2 when there is no request);
//   - CpuPeriod: 100000 µs, always; CpuQuota: limits.cpu in millicores ×
//     period / 1000, at least 1000 (0, unlimited, when there is no limit);
//   - MemoryLimitInBytes: limits.memory (0, unlimited, when unset) — what
//     makes the runtime OOM-kill the container;
//   - OomScoreAdj: see oomScoreAdj.
//
// Hugepage limits, swap and cgroup v2 unified settings are not set yet.
func linuxResources(pod *corev1.Pod, c *corev1.Container, node NodeInfo) *runtimeapi.LinuxContainerResources {
	req := effectiveRequests(c)
	return &runtimeapi.LinuxContainerResources{
		CpuShares:          milliCPUToShares(req.Cpu().MilliValue()),
		CpuPeriod:          cpuQuotaPeriod,
		CpuQuota:           milliCPUToQuota(c.Resources.Limits.Cpu().MilliValue()),
		MemoryLimitInBytes: c.Resources.Limits.Memory().Value(),
		OomScoreAdj:        oomScoreAdj(pod, c, node.MemoryCapacity),
	}
}

// milliCPUToShares converts a cpu request to cgroup cpu shares.
func milliCPUToShares(milliCPU int64) int64 {
	shares := milliCPU * sharesPerCPU / 1000
	switch {
	case shares < minCPUShares:
		return minCPUShares
	case shares > maxCPUShares:
		return maxCPUShares
	}
	return shares
}

// milliCPUToQuota converts a cpu limit to a CFS quota per cpuQuotaPeriod.
func milliCPUToQuota(milliCPU int64) int64 {
	if milliCPU <= 0 {
		return 0
	}
	return max(milliCPU*cpuQuotaPeriod/1000, minCPUQuota)
}

// oomScoreAdj returns the OOM score adjustment of a container's processes:
// -997 for node-critical pods and Guaranteed pods, 1000 for BestEffort
// pods, and for Burstable pods 1000 − 1000 × requests.memory / node memory,
// kept within [3, 999] so that Burstable always sits strictly between the
// two. A sidecar (restartable init container) is never more likely to be
// killed than the regular container with the smallest memory request.
// Unknown node memory (0) scores Burstable containers 999.
func oomScoreAdj(pod *corev1.Pod, c *corev1.Container, memoryCapacity int64) int64 {
	if isNodeCritical(pod) {
		return guaranteedOOMScoreAdj
	}
	switch QOSClass(pod) {
	case corev1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case corev1.PodQOSBestEffort:
		return bestEffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return maxBurstableOOMScoreAdj
	}
	score := func(memRequest int64) int64 {
		return 1000 - 1000*memRequest/memoryCapacity
	}
	adj := score(memoryRequest(c))
	if isSidecar(pod, c) && len(pod.Spec.Containers) > 0 {
		least := memoryRequest(&pod.Spec.Containers[0])
		for i := range pod.Spec.Containers[1:] {
			least = min(least, memoryRequest(&pod.Spec.Containers[i+1]))
		}
		adj = min(adj, score(least))
	}
	return min(max(adj, minBurstableOOMScoreAdj), maxBurstableOOMScoreAdj)
}

// memoryRequest returns a container's effective memory request in bytes.
func memoryRequest(c *corev1.Container) int64 {
	req := effectiveRequests(c)
	return req.Memory().Value()
}

// isSidecar reports whether c is one of the pod's restartable init
// containers.
func isSidecar(pod *corev1.Pod, c *corev1.Container) bool {
	if !podutil.IsSidecar(c) {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}

// isNodeCritical reports whether a pod is critical to the node: priority
// class system-node-critical on a static or mirror pod or with a
// system-critical priority.
func isNodeCritical(pod *corev1.Pod) bool {
	if pod.Spec.PriorityClassName != systemNodeCritical {
		return false
	}
	if podutil.IsStaticPod(pod) || podutil.IsMirrorPod(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}
