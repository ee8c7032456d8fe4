package cgroups

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podspec"
)

// CPU conversions, as the kernel and upstream have them.
const (
	// MinShares is the smallest cpu.shares the kernel takes (BestEffort's).
	MinShares    = 2
	maxShares    = 262144
	sharesPerCPU = 1024
	// QuotaPeriod is the CFS period in microseconds (100 ms).
	QuotaPeriod = 100000
	minQuota    = 1000
	// unboundedHugePages is the hugetlb limit of the QoS cgroups (1<<62).
	unboundedHugePages = int64(1) << 62
)

// MilliCPUToShares converts a cpu request to cpu.shares, within [2, 262144].
func MilliCPUToShares(milliCPU int64) uint64 {
	shares := milliCPU * sharesPerCPU / 1000
	return uint64(min(max(shares, MinShares), maxShares))
}

// MilliCPUToQuota converts a cpu limit to a CFS quota per QuotaPeriod, at
// least 1 ms; 0 (no limit) stays 0.
func MilliCPUToQuota(milliCPU int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	return max(milliCPU*QuotaPeriod/1000, minQuota)
}

// PodResources returns the limits of a pod's cgroup, as upstream's
// ResourceConfigForPod computes them (CFS quota enforced, no memory QoS):
// requests and limits are the pod's as the scheduler counts them
// (component-helpers PodRequests/PodLimits, pod-level resources and the
// RuntimeClass overhead included). Guaranteed: shares from the cpu
// request, the CFS quota of the cpu limit and the memory limit. Burstable:
// shares, and a quota (memory limit) only when every container, or the pod
// level, declares a cpu (memory) limit. BestEffort: 2 shares only. Huge
// pages: the pod's hugepages-<size> requests, by page size in bytes.
func PodResources(pod *corev1.Pod) deps.CgroupResources {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	cpuDeclared, memDeclared := true, true
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			cpuDeclared = cpuDeclared && !list[i].Resources.Limits.Cpu().IsZero()
			memDeclared = memDeclared && !list[i].Resources.Limits.Memory().IsZero()
		}
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		cpuDeclared = cpuDeclared || !pod.Spec.Resources.Limits.Cpu().IsZero()
		memDeclared = memDeclared || !pod.Spec.Resources.Limits.Memory().IsZero()
	}
	shares := MilliCPUToShares(milli(reqs, corev1.ResourceCPU))
	quota := MilliCPUToQuota(milli(limits, corev1.ResourceCPU))
	period := uint64(QuotaPeriod)
	memory := value(limits, corev1.ResourceMemory)
	r := deps.CgroupResources{HugePageLimits: HugePageLimits(reqs)}
	switch podspec.QOSClass(pod) {
	case corev1.PodQOSGuaranteed:
		r.CPUShares, r.CPUQuota, r.CPUPeriod, r.Memory = &shares, &quota, &period, &memory
	case corev1.PodQOSBurstable:
		r.CPUShares = &shares
		if cpuDeclared {
			r.CPUQuota, r.CPUPeriod = &quota, &period
		}
		if memDeclared {
			r.Memory = &memory
		}
	default:
		minShares := uint64(MinShares)
		r.CPUShares = &minShares
	}
	return r
}

// HugePageLimits returns the hugepages-<size> amounts of a resource list
// by page size in bytes.
func HugePageLimits(rl corev1.ResourceList) map[int64]int64 {
	out := map[int64]int64{}
	for name, q := range rl {
		size, ok := strings.CutPrefix(string(name), corev1.ResourceHugePagesPrefix)
		if !ok {
			continue
		}
		pageSize, err := resource.ParseQuantity(size)
		if err != nil {
			continue
		}
		out[pageSize.Value()] += q.Value()
	}
	return out
}

// QOSResources returns the limits of the Burstable and BestEffort cgroups
// for the active pods, as upstream's QoS container manager sets them:
// BestEffort 2 shares, Burstable the shares of the sum of the Burstable
// pods' cpu requests; huge pages unbounded for each of the node's page
// sizes. With memoryReservePercent > 0 (--qos-reserved=memory=N%),
// Burstable's memory limit is allocatable memory less N % of the
// Guaranteed pods' memory requests, and BestEffort's that less N % of the
// Burstable pods' (no memory limits with unknown allocatable memory).
func QOSResources(active []*corev1.Pod, allocatableMemory, memoryReservePercent int64, hugePageSizes []uint64) map[corev1.PodQOSClass]deps.CgroupResources {
	var burstableCPU int64
	memRequests := map[corev1.PodQOSClass]int64{}
	for _, pod := range active {
		qos := podspec.QOSClass(pod)
		if qos == corev1.PodQOSBestEffort {
			continue
		}
		reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		if qos == corev1.PodQOSBurstable {
			burstableCPU += milli(reqs, corev1.ResourceCPU)
		}
		memRequests[qos] += value(reqs, corev1.ResourceMemory)
	}
	be, bu := uint64(MinShares), MilliCPUToShares(burstableCPU)
	out := map[corev1.PodQOSClass]deps.CgroupResources{
		corev1.PodQOSBurstable:  {CPUShares: &bu, HugePageLimits: unboundedHugePageLimits(hugePageSizes)},
		corev1.PodQOSBestEffort: {CPUShares: &be, HugePageLimits: unboundedHugePageLimits(hugePageSizes)},
	}
	if memoryReservePercent > 0 && allocatableMemory > 0 {
		burstable := allocatableMemory - memRequests[corev1.PodQOSGuaranteed]*memoryReservePercent/100
		bestEffort := burstable - memRequests[corev1.PodQOSBurstable]*memoryReservePercent/100
		b, e := out[corev1.PodQOSBurstable], out[corev1.PodQOSBestEffort]
		b.Memory, e.Memory = &burstable, &bestEffort
		out[corev1.PodQOSBurstable], out[corev1.PodQOSBestEffort] = b, e
	}
	return out
}

// KubepodsResources returns the limits of the kubepods cgroup: the shares
// of the node's cpu, its memory and huge pages, from allocatable (capacity
// less kube and system reserved) when node allocatable is enforced on
// pods, else from capacity.
func KubepodsResources(rl corev1.ResourceList) deps.CgroupResources {
	r := deps.CgroupResources{HugePageLimits: HugePageLimits(rl)}
	if q, ok := rl[corev1.ResourceCPU]; ok {
		shares := MilliCPUToShares(q.MilliValue())
		r.CPUShares = &shares
	}
	if q, ok := rl[corev1.ResourceMemory]; ok {
		mem := q.Value()
		r.Memory = &mem
	}
	return r
}

func unboundedHugePageLimits(sizes []uint64) map[int64]int64 {
	out := make(map[int64]int64, len(sizes))
	for _, s := range sizes {
		out[int64(s)] = unboundedHugePages
	}
	return out
}

func milli(rl corev1.ResourceList, name corev1.ResourceName) int64 {
	if q, ok := rl[name]; ok {
		return q.MilliValue()
	}
	return 0
}

func value(rl corev1.ResourceList, name corev1.ResourceName) int64 {
	if q, ok := rl[name]; ok {
		return q.Value()
	}
	return 0
}
