package refmodel

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// QOSClass is the QoS class the apiserver gives pod at creation, from its
// spec alone (pod.Status.QOSClass is not read: in the simulator the agent's
// own rule writes it). The spec is first defaulted as the apiserver
// defaults it (see defaultedResources). Then, when the pod sets pod-level
// cpu, memory or huge pages, the class is that of the pod-level
// requirements; else it is BestEffort when no container requests or
// limits cpu or memory, Guaranteed when every init and regular container
// has equal non-zero requests and limits of both, and Burstable otherwise
// (including a mix of BestEffort and Guaranteed containers).
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	init, regular, podLevel := defaultedResources(pod)
	if podLevel != nil {
		return requirementsClass(*podLevel)
	}
	seen := map[corev1.PodQOSClass]bool{}
	for _, r := range append(init, regular...) {
		seen[requirementsClass(r)] = true
	}
	switch {
	case seen[corev1.PodQOSBurstable] || (seen[corev1.PodQOSGuaranteed] && seen[corev1.PodQOSBestEffort]):
		return corev1.PodQOSBurstable
	case seen[corev1.PodQOSGuaranteed]:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBestEffort
}

// requirementsClass classes one set of requirements by cpu and memory:
// each resource is BestEffort (no request nor limit), Guaranteed (equal
// non-zero request and limit) or Burstable; the set is the common class
// of both, Burstable when they differ.
func requirementsClass(r corev1.ResourceRequirements) corev1.PodQOSClass {
	var classes [2]corev1.PodQOSClass
	for i, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		switch {
		case req.Cmp(lim) != 0:
			classes[i] = corev1.PodQOSBurstable
		case req.IsZero():
			classes[i] = corev1.PodQOSBestEffort
		default:
			classes[i] = corev1.PodQOSGuaranteed
		}
	}
	if classes[0] != classes[1] {
		return corev1.PodQOSBurstable
	}
	return classes[0]
}

// defaultedResources is the requirements of pod's init and regular
// containers and its pod-level ones (nil unless it sets cpu, memory or
// huge pages at pod level) as the apiserver defaults them: a container's
// missing request of a resource it limits takes the limit; when the pod
// sets pod-level limits, a missing pod-level request takes the
// containers' aggregated request of it (cpu, memory: the resources that
// may be overcommitted) or else the pod-level limit.
func defaultedResources(pod *corev1.Pod) (init, regular []corev1.ResourceRequirements, podLevel *corev1.ResourceRequirements) {
	defaulted := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: make([]corev1.Container, len(pod.Spec.InitContainers)),
		Containers:     make([]corev1.Container, len(pod.Spec.Containers)),
	}}
	for i, c := range pod.Spec.InitContainers {
		defaulted.Spec.InitContainers[i] = corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy, Resources: containerDefaults(c.Resources)}
		init = append(init, defaulted.Spec.InitContainers[i].Resources)
	}
	for i, c := range pod.Spec.Containers {
		defaulted.Spec.Containers[i] = corev1.Container{Name: c.Name, Resources: containerDefaults(c.Resources)}
		regular = append(regular, defaulted.Spec.Containers[i].Resources)
	}
	if pod.Spec.Resources == nil || !resourcehelper.IsPodLevelResourcesSet(pod) {
		return init, regular, nil
	}
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for name, q := range pod.Spec.Resources.Requests {
		r.Requests[name] = q
	}
	for name, q := range pod.Spec.Resources.Limits {
		r.Limits[name] = q
	}
	if len(r.Limits) > 0 {
		aggregated := resourcehelper.AggregateContainerRequests(defaulted, resourcehelper.PodResourcesOptions{})
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := r.Requests[name]; !ok {
				if q, ok := aggregated[name]; ok {
					r.Requests[name] = q
				}
			}
		}
		for name, q := range r.Limits {
			if _, ok := r.Requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
				r.Requests[name] = q
			}
		}
	}
	return init, regular, &r
}

// containerDefaults is a container's requirements with each missing
// request of a limited resource set to its limit.
func containerDefaults(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: r.Limits}
	for name, q := range r.Requests {
		out.Requests[name] = q
	}
	for name, q := range r.Limits {
		if _, ok := out.Requests[name]; !ok {
			out.Requests[name] = q
		}
	}
	return out
}

// withDefaultRequests is a shallow copy of pod whose containers' missing
// requests of limited resources are set to their limits.
func withDefaultRequests(pod *corev1.Pod) *corev1.Pod {
	out := *pod
	out.Spec.InitContainers = defaultContainers(pod.Spec.InitContainers)
	out.Spec.Containers = defaultContainers(pod.Spec.Containers)
	return &out
}

func defaultContainers(cs []corev1.Container) []corev1.Container {
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = c
		out[i].Resources = containerDefaults(c.Resources)
	}
	return out
}
