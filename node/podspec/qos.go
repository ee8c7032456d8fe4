package podspec

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// qosResources are the resources the QoS class is made of.
var qosResources = [...]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// QOSClass returns a pod's quality-of-service class as upstream's
// GetPodQOS does. It is the one owner of the rule: cgroups, status,
// admission, eviction and the resource managers all read it.
//
//   - pod.Status.QOSClass once set (the apiserver sets it at creation and
//     it never changes, not even when a resize would compute another);
//   - else, when the pod sets pod-level resources (spec.resources naming
//     cpu, memory or huge pages), from those alone;
//   - else from each init and regular container's cpu and memory.
//
// A set of requirements is BestEffort with no cpu or memory request or
// limit, Guaranteed when both have equal non-zero requests and limits, and
// Burstable otherwise; the pod is Burstable as soon as one container is,
// or when BestEffort and Guaranteed containers mix.
//
// The spec is read as the apiserver defaults it before it computes the
// class, so that undefaulted pods (static manifests, simulated API
// objects) get the class a real apiserver would report: a container's
// missing request takes its limit (effectiveRequests), and pod-level
// requests and limits are completed from the containers' (see
// podLevelResources).
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	if requests, limits := podLevelResources(pod); podLevelSet(requests, limits) {
		return requirementsQOS(requests, limits)
	}
	var qos corev1.PodQOSClass
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			switch cq := requirementsQOS(effectiveRequests(&list[i]), list[i].Resources.Limits); {
			case cq == corev1.PodQOSBurstable:
				return cq
			case qos == "":
				qos = cq
			case qos != cq:
				return corev1.PodQOSBurstable
			}
		}
	}
	if qos == "" {
		return corev1.PodQOSBestEffort
	}
	return qos
}

// podLevelSet reports whether pod-level requests or limits name a
// resource pods may set at pod level (cpu, memory, huge pages), as
// component-helpers' IsPodLevelResourcesSet does for a pod.
func podLevelSet(requests, limits corev1.ResourceList) bool {
	for _, list := range []corev1.ResourceList{requests, limits} {
		for name := range list {
			if resourcehelper.IsSupportedPodLevelResource(name) {
				return true
			}
		}
	}
	return false
}

// podLevelResources returns the pod-level requests and limits as the
// apiserver completes them at creation (PodLevelResourcesFixDefaulting,
// on by default in 1.37) when the pod sets any, for cpu and memory:
//
//   - a missing request takes the containers' aggregated requests (each
//     container's defaulted to its limits, init containers and sidecars
//     counted as the scheduler counts them) when they request it, else
//     the pod-level limit;
//   - a missing limit of a resource the pod requests takes the
//     containers' aggregated limits, raised to the pod-level request,
//     when every init and regular container limits it.
//
// Other resources are left as the pod sets them. Both are nil without
// pod-level resources.
func podLevelResources(pod *corev1.Pod) (requests, limits corev1.ResourceList) {
	r := pod.Spec.Resources
	if r == nil || len(r.Requests)+len(r.Limits) == 0 {
		return nil, nil
	}
	requests, limits = maps.Clone(r.Requests), maps.Clone(r.Limits)
	if requests == nil {
		requests = corev1.ResourceList{}
	}
	if limits == nil {
		limits = corev1.ResourceList{}
	}
	containerRequests, containerLimits := aggregateContainerResources(pod)
	for _, name := range qosResources {
		if _, ok := requests[name]; !ok {
			if q, ok := containerRequests[name]; ok {
				requests[name] = q
			} else if q, ok := limits[name]; ok {
				requests[name] = q
			}
		}
		req, requested := requests[name]
		lim, aggregated := containerLimits[name]
		if _, ok := limits[name]; ok || !requested || !aggregated || !everyContainerLimits(pod, name) {
			continue
		}
		if req.Cmp(lim) > 0 {
			lim = req
		}
		limits[name] = lim
	}
	return requests, limits
}

// everyContainerLimits reports whether every init and regular container
// of the pod sets a limit of name.
func everyContainerLimits(pod *corev1.Pod, name corev1.ResourceName) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if _, ok := list[i].Resources.Limits[name]; !ok {
				return false
			}
		}
	}
	return true
}

// aggregateContainerResources is the pod's containers' requests and
// limits aggregated as the scheduler counts them, each container's
// requests defaulted to its limits first.
func aggregateContainerResources(pod *corev1.Pod) (requests, limits corev1.ResourceList) {
	defaulted := func(list []corev1.Container) []corev1.Container {
		out := make([]corev1.Container, len(list))
		for i := range list {
			out[i] = corev1.Container{Name: list[i].Name, RestartPolicy: list[i].RestartPolicy}
			out[i].Resources = corev1.ResourceRequirements{Requests: effectiveRequests(&list[i]), Limits: list[i].Resources.Limits}
		}
		return out
	}
	p := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: defaulted(pod.Spec.InitContainers),
		Containers:     defaulted(pod.Spec.Containers),
	}}
	opts := resourcehelper.PodResourcesOptions{}
	return resourcehelper.AggregateContainerRequests(p, opts), resourcehelper.AggregateContainerLimits(p, opts)
}

// requirementsQOS is the class of one set of requests and limits.
func requirementsQOS(requests, limits corev1.ResourceList) corev1.PodQOSClass {
	var qos corev1.PodQOSClass
	for _, name := range qosResources {
		req, lim := requests[name], limits[name]
		rq := corev1.PodQOSGuaranteed
		switch {
		case brokenQOS && lim.IsZero() && !req.IsZero():
			// the deliberately broken build of teeth_qos.go
		case !req.Equal(lim):
			return corev1.PodQOSBurstable
		case req.IsZero():
			rq = corev1.PodQOSBestEffort
		}
		if qos == "" {
			qos = rq
		} else if qos != rq {
			return corev1.PodQOSBurstable
		}
	}
	return qos
}
