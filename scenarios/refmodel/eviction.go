package refmodel

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Signal is an eviction signal, as upstream names it.
type Signal string

// The signals whose ranking the model knows.
const (
	SignalMemoryAvailable  Signal = "memory.available"
	SignalNodeFsAvailable  Signal = "nodefs.available"
	SignalNodeFsInodesFree Signal = "nodefs.inodesFree"
	SignalImageFsAvailable Signal = "imagefs.available"
	SignalPIDAvailable     Signal = "pid.available"
)

// Usage is what a pod uses of the resources eviction ranks by.
type Usage struct {
	Memory, Disk, Inodes, Processes int64
}

// Candidate is a pod the eviction manager may evict, with its usage;
// HasStats is false when the manager's sample had none for it.
type Candidate struct {
	Pod      *corev1.Pod
	Usage    Usage
	HasStats bool
}

// Request is pod's request of resource as the eviction manager reads it
// (upstream's GetResourceRequestQuantity): the pod-level request when the
// pod sets pod-level resources, else the containers' (the larger of the
// regular containers and sidecars together and any init container beside
// the sidecars started before it), plus the pod's overhead of the resource
// when that total is not zero. cpu in millicores, others in units. The
// pod is read as the apiserver (or, for a static pod, the kubelet's file
// source) defaults it: a container's missing request takes its limit.
func Request(pod *corev1.Pod, resource corev1.ResourceName) int64 {
	pod = withDefaultRequests(pod)
	opts := resourcehelper.PodResourcesOptions{SkipContainerLevelResources: resourcehelper.IsPodLevelResourcesSet(pod), ExcludeOverhead: true}
	q, ok := resourcehelper.PodRequests(pod, opts)[resource]
	if !ok || q.IsZero() {
		return 0
	}
	if o, ok := pod.Spec.Overhead[resource]; ok {
		q.Add(o)
	}
	if resource == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// Rank orders cands for eviction under signal, the first to evict first
// (ties keep the given order), by upstream's rankers:
//   - memory: pods without stats, then those whose memory exceeds their
//     memory request; then lower priority; then more memory above the
//     request;
//   - pids: lower priority; then pods without stats; then more processes;
//   - nodefs or imagefs bytes: pods without stats, then those whose disk
//     exceeds their ephemeral-storage request; then lower priority; then
//     more disk above that request;
//   - inodes: the same with inodes, which exceed their (inode) request as
//     soon as there is one, and are measured above the pod's
//     ephemeral-storage request (as upstream does).
func Rank(signal Signal, cands []Candidate) {
	prio := func(a, b Candidate) int { return cmp.Compare(Priority(a.Pod), Priority(b.Pod)) }
	noStats := func(a, b Candidate) int { return trueFirst(!a.HasStats, !b.HasStats) }
	var order []func(a, b Candidate) int
	switch signal {
	case SignalMemoryAvailable:
		order = byRequests(func(c Candidate) int64 { return c.Usage.Memory }, corev1.ResourceMemory, corev1.ResourceMemory, noStats, prio)
	case SignalPIDAvailable:
		order = []func(a, b Candidate) int{prio, noStats, func(a, b Candidate) int { return cmp.Compare(b.Usage.Processes, a.Usage.Processes) }}
	case SignalNodeFsAvailable, SignalImageFsAvailable:
		order = byRequests(func(c Candidate) int64 { return c.Usage.Disk }, corev1.ResourceEphemeralStorage, corev1.ResourceEphemeralStorage, noStats, prio)
	case SignalNodeFsInodesFree:
		order = byRequests(func(c Candidate) int64 { return c.Usage.Inodes }, "inodes", corev1.ResourceEphemeralStorage, noStats, prio)
	}
	slices.SortStableFunc(cands, func(a, b Candidate) int {
		for _, f := range order {
			if r := f(a, b); r != 0 {
				return r
			}
		}
		return 0
	})
}

// byRequests is the ranking shared by memory and disk: no stats first,
// then usage over the exceed resource's request, then priority, then
// usage above the above resource's request, larger first.
func byRequests(use func(Candidate) int64, exceed, above corev1.ResourceName, noStats, prio func(a, b Candidate) int) []func(a, b Candidate) int {
	return []func(a, b Candidate) int{
		noStats,
		func(a, b Candidate) int {
			return trueFirst(use(a) > Request(a.Pod, exceed), use(b) > Request(b.Pod, exceed))
		},
		prio,
		func(a, b Candidate) int {
			return cmp.Compare(use(b)-Request(b.Pod, above), use(a)-Request(a.Pod, above))
		},
	}
}

// trueFirst orders true before false.
func trueFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// AdmissionRequests is what pod requests as the kubelet's admission (and
// the scheduler) count it: every resource the containers request as
// defaulted, the regular containers and sidecars summed or the largest
// init container beside the sidecars before it if more, with the pod's
// overhead; the pod-level requests instead when it sets them.
func AdmissionRequests(pod *corev1.Pod) corev1.ResourceList {
	pod = withDefaultRequests(pod)
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{SkipContainerLevelResources: resourcehelper.IsPodLevelResourcesSet(pod)})
}
