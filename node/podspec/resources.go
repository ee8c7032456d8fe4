package podspec

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
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

// linuxResources returns a container's cgroup settings:
//
//   - CpuShares: requests.cpu in millicores × 1024 / 1000, within [2, 262144];
//     with no request, the cpu limit stands in (see containerLimit);
//   - CpuPeriod: 100000 µs, always; CpuQuota: the cpu limit in millicores ×
//     period / 1000, at least 1000 (0, unlimited, when there is no limit);
//   - MemoryLimitInBytes: the memory limit (0, unlimited, when unset) — what
//     makes the runtime OOM-kill the container;
//   - OomScoreAdj: see oomScoreAdj;
//   - HugepageLimits: one per page size of the node, the container's (or
//     else the pod's) hugepages-<size> limit, 0 when neither sets one;
//   - Unified (cgroup v2 only): memory.high "max" (memory QoS is off), and
//     memory.oom.group "1" so that an OOM kills the whole container unless
//     the node keeps single-process OOM kills.
//
// Swap is not set: the node runs without swap (NoSwap).
func linuxResources(pod *corev1.Pod, c *corev1.Container, node NodeInfo) *runtimeapi.LinuxContainerResources {
	cpuRequest, ok := c.Resources.Requests[corev1.ResourceCPU]
	if !ok {
		cpuRequest = containerLimit(pod, c, corev1.ResourceCPU)
	}
	r := cgroupResources(cpuRequest, containerLimit(pod, c, corev1.ResourceCPU), containerLimit(pod, c, corev1.ResourceMemory), node)
	r.OomScoreAdj = oomScoreAdj(pod, c, node.MemoryCapacity)
	r.HugepageLimits = hugepageLimits(pod, c, node.HugePageSizes)
	if node.CgroupV2 {
		r.Unified["memory.high"] = "max"
	}
	return r
}

// containerLimit is c's limit of name, or the pod-level limit when c sets
// none and the pod sets pod-level resources.
func containerLimit(pod *corev1.Pod, c *corev1.Container, name corev1.ResourceName) resource.Quantity {
	if q := c.Resources.Limits[name]; !q.IsZero() || !resourcehelper.IsPodLevelResourcesSet(pod) {
		return q
	}
	return pod.Spec.Resources.Limits[name]
}

// cgroupResources turns a cpu request and cpu and memory limits into cgroup
// settings (shares, CFS period and quota, memory limit), with
// memory.oom.group on cgroup v2 unless the node keeps single-process OOM
// kills. The container, the pod sandbox and its overhead share it.
func cgroupResources(cpuRequest, cpuLimit, memoryLimit resource.Quantity, node NodeInfo) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{
		CpuShares:          milliCPUToShares(cpuRequest.MilliValue()),
		CpuPeriod:          cpuQuotaPeriod,
		CpuQuota:           milliCPUToQuota(cpuLimit.MilliValue()),
		MemoryLimitInBytes: memoryLimit.Value(),
	}
	if node.CgroupV2 {
		r.Unified = map[string]string{}
		if !node.SingleProcessOOMKill {
			r.Unified["memory.oom.group"] = "1"
		}
	}
	return r
}

// hugepageLimits returns a limit for each of the node's huge page sizes:
// the container's hugepages-<size> limit, else the pod-level one, else 0
// (no huge pages of that size). Sizes the node lacks are left out.
func hugepageLimits(pod *corev1.Pod, c *corev1.Container, sizes []uint64) []*runtimeapi.HugepageLimit {
	if len(sizes) == 0 {
		return nil
	}
	want := map[string]uint64{}
	add := func(limits corev1.ResourceList) {
		for name, q := range limits {
			size, ok := strings.CutPrefix(string(name), corev1.ResourceHugePagesPrefix)
			if !ok {
				continue
			}
			pageSize, err := resource.ParseQuantity(size)
			if err != nil || pageSize.Value() <= 0 {
				continue
			}
			if unit, ok := hugePageUnitSize(uint64(pageSize.Value())); ok {
				want[unit] = uint64(q.Value())
			}
		}
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		add(pod.Spec.Resources.Limits)
	}
	add(c.Resources.Limits)
	out := make([]*runtimeapi.HugepageLimit, 0, len(sizes))
	for _, size := range sizes {
		unit, ok := hugePageUnitSize(size)
		if !ok {
			continue
		}
		out = append(out, &runtimeapi.HugepageLimit{PageSize: unit, Limit: want[unit]})
	}
	return out
}

// hugePageUnitSize names a page size the way the cgroup's hugetlb files
// do: 2097152 is "2MB", 1073741824 "1GB", 65536 "64KB". Sizes that are not
// a power of two are not page sizes.
func hugePageUnitSize(size uint64) (string, bool) {
	if size == 0 || size&(size-1) != 0 {
		return "", false
	}
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for size >= 1024 && i < len(units)-1 {
		size /= 1024
		i++
	}
	return fmt.Sprintf("%d%s", size, units[i]), true
}

// SandboxResources returns the pod sandbox's cgroup settings, as upstream
// sends them: resources are the pod's requests and limits (its containers'
// aggregated as the scheduler counts them, or its pod-level resources)
// without the RuntimeClass overhead; overhead is that overhead, its cpu
// counted as both request and limit (empty without overhead).
func SandboxResources(pod *corev1.Pod, node NodeInfo) (resources, overhead *runtimeapi.LinuxContainerResources) {
	opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
	req, lim := resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts)
	cpuRequest, ok := req[corev1.ResourceCPU]
	if !ok {
		cpuRequest = lim[corev1.ResourceCPU]
	}
	resources = cgroupResources(cpuRequest, lim[corev1.ResourceCPU], lim[corev1.ResourceMemory], node)
	overhead = &runtimeapi.LinuxContainerResources{}
	if pod.Spec.Overhead != nil {
		cpu := pod.Spec.Overhead[corev1.ResourceCPU]
		overhead = cgroupResources(cpu, cpu, pod.Spec.Overhead[corev1.ResourceMemory], node)
	}
	return resources, overhead
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
// Unknown node memory (0) scores Burstable containers 999. A pod-level
// memory request beyond what its containers request is shared equally
// among all its containers (init ones included) for this score.
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
	share := podMemoryShare(pod)
	score := func(memRequest int64) int64 {
		return 1000 - 1000*(memRequest+share)/memoryCapacity
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

// podMemoryShare is each container's share of the pod-level memory request
// its containers' own requests leave over (0 without pod-level requests).
func podMemoryShare(pod *corev1.Pod) int64 {
	if !resourcehelper.IsPodLevelRequestsSet(pod) || pod.Spec.Resources.Requests.Memory().IsZero() {
		return 0
	}
	containers := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	left := max(pod.Spec.Resources.Requests.Memory().Value()-containers.Memory().Value(), 0)
	return left / int64(len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
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

// ContainerResources are the cgroup resources container c of pod is
// created with (and resized to): the same settings as its create config.
func ContainerResources(pod *corev1.Pod, c *corev1.Container, node NodeInfo) *runtimeapi.LinuxContainerResources {
	return linuxResources(pod, c, node)
}
