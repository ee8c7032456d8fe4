package admission

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Preemption of admitted pods for a critical one, as the kubelet's
// critical pod admission handler words it.
const (
	ReasonPreempting          = "Preempting"
	PreemptedMessage          = "Preempted in order to admit critical pod"
	PreemptedConditionMessage = "Pod was preempted by Kubelet to accommodate a critical pod."
)

// PodsToPreempt returns the admitted pods to stop so that a critical pod
// refused for resources alone fits, chosen as the kubelet chooses them:
// only pods it may preempt (not critical, or of lower priority), as few
// Guaranteed pods as BestEffort and Burstable ones cannot replace, then
// as few Burstable ones, then BestEffort ones; within a class, each time
// the pod whose requests come closest to what is still missing (ties: the
// smaller memory, then cpu, request). ok is false when the pod is not
// critical, fails for other reasons than resources, or no set of pods
// frees enough.
func PodsToPreempt(pod *corev1.Pod, qos func(*corev1.Pod) corev1.PodQOSClass, node Node, admitted []*corev1.Pod) ([]*corev1.Pod, bool) {
	if !podutil.IsCriticalPod(pod) || !admitOS(pod).Admitted() {
		return nil, false
	}
	used := UsageOf(admitted)
	if !admitPlacement(pod, node, used).Admitted() {
		return nil, false
	}
	short := shortfalls(pod, node, used)
	if len(short) == 0 {
		return nil, false
	}
	var need requirements
	for _, s := range short {
		need = append(need, requirement{s.resource, s.missing})
	}
	var bestEffort, burstable, guaranteed []*corev1.Pod
	for _, p := range admitted {
		if !preemptable(pod, p) {
			continue
		}
		switch qos(p) {
		case corev1.PodQOSBestEffort:
			bestEffort = append(bestEffort, p)
		case corev1.PodQOSBurstable:
			burstable = append(burstable, p)
		case corev1.PodQOSGuaranteed:
			guaranteed = append(guaranteed, p)
		}
	}
	all := append(append(append([]*corev1.Pod(nil), bestEffort...), burstable...), guaranteed...)
	if len(need.minus(all...)) > 0 {
		return nil, false
	}
	g, ok := closest(guaranteed, need.minus(append(append([]*corev1.Pod(nil), bestEffort...), burstable...)...))
	if !ok {
		return nil, false
	}
	b, ok := closest(burstable, need.minus(append(append([]*corev1.Pod(nil), bestEffort...), g...)...))
	if !ok {
		return nil, false
	}
	be, ok := closest(bestEffort, need.minus(append(append([]*corev1.Pod(nil), b...), g...)...))
	if !ok {
		return nil, false
	}
	return append(append(be, b...), g...), true
}

// preemptable reports whether preemptor may stop victim: a critical pod
// any non-critical one, else a pod of higher priority.
func preemptable(preemptor, victim *corev1.Pod) bool {
	if podutil.IsCriticalPod(preemptor) && !podutil.IsCriticalPod(victim) {
		return true
	}
	return preemptor.Spec.Priority != nil && victim.Spec.Priority != nil && *preemptor.Spec.Priority > *victim.Spec.Priority
}

// requirement is an amount of a resource still missing.
type requirement struct {
	resource corev1.ResourceName
	amount   int64
}

type requirements []requirement

// request is what a pod requests of r; one of the "pods" resource.
func request(p *corev1.Pod, r corev1.ResourceName) int64 {
	if r == corev1.ResourcePods {
		return 1
	}
	return Request(p, r)
}

// minus is what is still missing once pods are gone.
func (rs requirements) minus(pods ...*corev1.Pod) requirements {
	var out requirements
	for _, r := range rs {
		left := r.amount
		for _, p := range pods {
			left -= request(p, r.resource)
			if left <= 0 {
				break
			}
		}
		if left > 0 {
			out = append(out, requirement{r.resource, left})
		}
	}
	return out
}

// distance is how far stopping p leaves rs from met (0: met).
func (rs requirements) distance(p *corev1.Pod) float64 {
	d := 0.0
	for _, r := range rs {
		if left := float64(r.amount - request(p, r.resource)); left > 0 {
			d += math.Pow(left/float64(r.amount), 2)
		}
	}
	return d
}

// closest picks pods one by one, each the closest to meeting what is
// still missing, until nothing is; false when pods run out first.
func closest(pods []*corev1.Pod, need requirements) ([]*corev1.Pod, bool) {
	pods = append([]*corev1.Pod(nil), pods...)
	var out []*corev1.Pod
	for len(need) > 0 {
		if len(pods) == 0 {
			return nil, false
		}
		best, bestDist := 0, float64(len(need)+1)
		for i, p := range pods {
			d := need.distance(p)
			if d < bestDist || d == bestDist && smallerRequest(p, pods[best]) {
				best, bestDist = i, d
			}
		}
		need = need.minus(pods[best])
		out = append(out, pods[best])
		pods = append(pods[:best], pods[best+1:]...)
	}
	return out, true
}

// smallerRequest orders by memory request, then cpu request.
func smallerRequest(a, b *corev1.Pod) bool {
	for _, r := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU} {
		if x, y := Request(a, r), Request(b, r); x != y {
			return x < y
		}
	}
	return true
}
