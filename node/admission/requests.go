package admission

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/node/podutil"
)

// PodRequests is what a pod requests of the node, as the scheduler and
// the kubelet count it: the regular containers' and sidecars' requests
// summed, or the largest an init container needs beside the sidecars
// started before it if that is more, plus the pod's overhead. A limit
// stands in for a request a container does not set (the apiserver's
// defaulting, done here too for pods that skipped it: static manifests,
// simulated API objects).
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addTo(total, containerRequests(&pod.Spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		r := containerRequests(c)
		if podutil.IsSidecar(c) {
			addTo(sidecars, r)
			addTo(total, r)
			maxTo(initMax, sidecars)
			continue
		}
		need := corev1.ResourceList{}
		addTo(need, sidecars)
		addTo(need, r)
		maxTo(initMax, need)
	}
	maxTo(total, initMax)
	addTo(total, pod.Spec.Overhead)
	return total
}

// containerRequests is a container's requests, limits standing in for
// unset requests.
func containerRequests(c *corev1.Container) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range c.Resources.Limits {
		out[name] = q.DeepCopy()
	}
	for name, q := range c.Resources.Requests {
		out[name] = q.DeepCopy()
	}
	return out
}

func addTo(to, from corev1.ResourceList) {
	for name, q := range from {
		sum, ok := to[name]
		if !ok {
			sum = resource.Quantity{Format: q.Format}
		}
		sum.Add(q)
		to[name] = sum
	}
}

func maxTo(to, from corev1.ResourceList) {
	for name, q := range from {
		if cur, ok := to[name]; !ok || q.Cmp(cur) > 0 {
			to[name] = q.DeepCopy()
		}
	}
}

// Request is one resource of PodRequests in its base unit (millicores
// for cpu, bytes or a count otherwise).
func Request(pod *corev1.Pod, name corev1.ResourceName) int64 {
	q, ok := PodRequests(pod)[name]
	if !ok {
		return 0
	}
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// PodLimits is a pod's limits as the kubelet sums them: the pod-level
// limits where the pod sets them, else the regular containers' and
// sidecars' limits summed, or the largest an init container has beside
// the sidecars started before it if that is more, plus the pod's overhead
// for each resource some container limits. A resource no container
// limits is absent.
func PodLimits(pod *corev1.Pod) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addTo(total, pod.Spec.Containers[i].Resources.Limits)
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if podutil.IsSidecar(c) {
			addTo(sidecars, c.Resources.Limits)
			addTo(total, c.Resources.Limits)
			maxTo(initMax, sidecars)
			continue
		}
		need := corev1.ResourceList{}
		addTo(need, sidecars)
		addTo(need, c.Resources.Limits)
		maxTo(initMax, need)
	}
	maxTo(total, initMax)
	for name, q := range pod.Spec.Overhead {
		if sum, ok := total[name]; ok {
			sum.Add(q)
			total[name] = sum
		}
	}
	if pod.Spec.Resources != nil {
		for name, q := range pod.Spec.Resources.Limits {
			total[name] = q.DeepCopy()
		}
	}
	return total
}
