package refmodel

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The bounds of a cgroup's cpu shares, and shares per cpu (upstream's
// cm.MinShares, MaxShares and SharesPerCPU).
const (
	minShares    = 2
	maxShares    = 262144
	sharesPerCPU = 1024
)

// MilliCPUToShares converts a cpu request in millicores to cpu shares,
// within the bounds: no request is the least shares.
func MilliCPUToShares(milli int64) uint64 {
	shares := milli * sharesPerCPU / 1000
	return uint64(min(max(shares, minShares), maxShares))
}

// BurstableShares is the cpu shares of the Burstable QoS cgroup for the
// active pods: the shares of the sum of the Burstable pods' cpu requests
// (overhead included).
func BurstableShares(active []*corev1.Pod) uint64 {
	var milli int64
	for _, pod := range active {
		if QOSClass(pod) != corev1.PodQOSBurstable {
			continue
		}
		if q, ok := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[corev1.ResourceCPU]; ok {
			milli += q.MilliValue()
		}
	}
	return MilliCPUToShares(milli)
}

// ExclusiveCPUs is how many CPUs the static CPU manager policy gives
// container c of pod for itself: its cpu request when the pod is
// Guaranteed and the request is a whole number of CPUs; else none (it
// runs in the shared pool). With PodLevelResourceManagers off (its 1.37
// default) a pod's pod-level resources change nothing here but its class.
func ExclusiveCPUs(pod *corev1.Pod, c *corev1.Container) int {
	if QOSClass(pod) != corev1.PodQOSGuaranteed {
		return 0
	}
	q, ok := containerDefaults(c.Resources).Requests[corev1.ResourceCPU]
	if !ok || q.MilliValue()%1000 != 0 {
		return 0
	}
	return int(q.Value())
}
