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
