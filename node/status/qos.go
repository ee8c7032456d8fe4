package status

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// QOSClass computes a pod's quality-of-service class from its cpu and memory
// requests and limits (pod-level resources when set, else the sum over init
// and regular containers): BestEffort when none is set, Guaranteed when
// every container limits both and requests equal limits, else Burstable.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if r := pod.Spec.Resources; r != nil && (hasQoSResource(r.Requests) || hasQoSResource(r.Limits)) {
		req, lim := corev1.ResourceList{}, corev1.ResourceList{}
		add(req, r.Requests)
		add(lim, r.Limits)
		return classify(req, lim, len(lim) == 2)
	}
	req, lim := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	var all []corev1.Container
	all = append(all, pod.Spec.InitContainers...)
	all = append(all, pod.Spec.Containers...)
	for i := range all {
		r := &all[i].Resources
		add(req, r.Requests)
		n := add(lim, r.Limits)
		if n != 2 {
			guaranteed = false
		}
	}
	return classify(req, lim, guaranteed)
}

func classify(req, lim corev1.ResourceList, guaranteed bool) corev1.PodQOSClass {
	if len(req) == 0 && len(lim) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed && len(lim) == 2 {
		for name, q := range req {
			if l, ok := lim[name]; !ok || l.Cmp(q) != 0 {
				guaranteed = false
			}
		}
		if guaranteed {
			return corev1.PodQOSGuaranteed
		}
	}
	return corev1.PodQOSBurstable
}

func isQoSResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

func hasQoSResource(l corev1.ResourceList) bool {
	for name, q := range l {
		if isQoSResource(name) && !q.IsZero() {
			return true
		}
	}
	return false
}

// add sums the non-zero cpu and memory quantities of from into to and
// returns how many of the two from set.
func add(to, from corev1.ResourceList) int {
	n := 0
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := from[name]
		if !ok || q.IsZero() {
			continue
		}
		n++
		sum, ok := to[name]
		if !ok {
			sum = resource.Quantity{}
		}
		sum.Add(q)
		to[name] = sum
	}
	return n
}
