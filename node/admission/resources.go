package admission

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Admission reasons, as the kubelet's (the OutOf<resource> family is
// built by OutOfReason).
const (
	ReasonPodOSSelectorNodeLabelDoesNotMatch = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonPodOSNotSupported                  = "PodOSNotSupported"
	ReasonNodeAffinity                       = "NodeAffinity"
	ReasonNodeName                           = "NodeName"
	ReasonNodePorts                          = "NodePorts"
	ReasonTaintToleration                    = "TaintToleration"
)

// nodeOS is the only operating system lockstep runs.
const nodeOS = "linux"

// Node is what admission checks a pod against: the node object as the API
// knows it (labels, taints), with the allocatable resources the agent
// computes (capacity minus reserved minus the hard eviction thresholds;
// "pods" is maxPods).
type Node struct {
	Name        string
	Labels      map[string]string
	Taints      []corev1.Taint
	Allocatable corev1.ResourceList
}

// Decision is an admission verdict; an empty Reason admits the pod.
type Decision struct {
	Reason, Message string
}

// Admitted reports whether the pod may run.
func (d Decision) Admitted() bool { return d.Reason == "" }

// AdmitBeside decides, as the kubelet's predicate admission, whether pod
// may run on node beside the pods already admitted (running, not
// terminating), given as their Usage (an Admitted set keeps it; UsageOf
// sums a list). The checks run in the kubelet's order and the first
// failure is the verdict: the kubernetes.io/os pod label, spec.os,
// resources (pod count, cpu, memory, ephemeral-storage, then other
// resources the node has), required node affinity and nodeSelector, node
// name, host ports, then untolerated NoExecute taints (not for static
// pods). It costs what pod's own requests and ports cost.
func AdmitBeside(pod *corev1.Pod, node Node, used *Usage) Decision {
	if d := admitOS(pod); !d.Admitted() {
		return d
	}
	if short := shortfalls(pod, node, used); len(short) > 0 {
		return short[0].decision
	}
	return admitPlacement(pod, node, used)
}

// admitOS checks the pod's operating system.
func admitOS(pod *corev1.Pod) Decision {
	if l, ok := pod.Labels[corev1.LabelOSStable]; ok && l != nodeOS {
		return Decision{ReasonPodOSSelectorNodeLabelDoesNotMatch, "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != nodeOS {
		return Decision{ReasonPodOSNotSupported, "Failed to admit pod as the OS field doesn't match node OS"}
	}
	return Decision{}
}

// admitPlacement checks what preempting other pods cannot fix: node
// affinity, node name, host ports and taints.
func admitPlacement(pod *corev1.Pod, node Node, used *Usage) Decision {
	if !MatchesNodeAffinity(pod, node) {
		return predicateFailure(ReasonNodeAffinity, "node(s) didn't match Pod's node affinity/selector")
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return predicateFailure(ReasonNodeName, "node(s) didn't match the requested node name")
	}
	if hostPortConflict(pod, used) {
		return predicateFailure(ReasonNodePorts, "node(s) didn't have free ports for the requested pod ports")
	}
	if !podutil.IsStaticPod(pod) {
		if _, ok := UntoleratedTaint(node.Taints, pod.Spec.Tolerations, corev1.TaintEffectNoExecute); ok {
			return predicateFailure(ReasonTaintToleration, "node(s) had taints that the pod didn't tolerate")
		}
	}
	return Decision{}
}

func predicateFailure(name, desc string) Decision {
	return Decision{name, fmt.Sprintf("Predicate %s failed: %s", name, desc)}
}

// OutOfReason is the reason of a pod refused for lack of resource r.
func OutOfReason(r corev1.ResourceName) string { return "OutOf" + string(r) }

// insufficient is the kubelet's verdict for resource r.
func insufficient(r corev1.ResourceName, requested, used, capacity int64) Decision {
	return Decision{OutOfReason(r), fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", r, requested, used, capacity)}
}

// amount is a quantity of r in its base unit (millicores for cpu).
func amount(l corev1.ResourceList, r corev1.ResourceName) int64 {
	q, ok := l[r]
	if !ok {
		return 0
	}
	if r == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// shortfall is one resource the node lacks for a pod: the verdict, and
// how much more is needed.
type shortfall struct {
	resource corev1.ResourceName
	missing  int64
	decision Decision
}

// shortfalls checks the pod count, then each requested resource against
// allocatable minus what the admitted pods request (used), and returns
// every resource that falls short, in that order.
func shortfalls(pod *corev1.Pod, node Node, used *Usage) []shortfall {
	var out []shortfall
	if maxPods := amount(node.Allocatable, corev1.ResourcePods); used.Pods()+1 > int(maxPods) {
		out = append(out, shortfall{corev1.ResourcePods, int64(used.Pods()) + 1 - maxPods,
			insufficient(corev1.ResourcePods, 1, int64(used.Pods()), maxPods)})
	}
	req := PodRequests(pod)
	order := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}
	var others []corev1.ResourceName
	for _, r := range slices.Sorted(maps.Keys(req)) {
		if !slices.Contains(order, r) && r != corev1.ResourcePods {
			others = append(others, r)
		}
	}
	for _, r := range append(order, others...) {
		want := amount(req, r)
		if want <= 0 {
			continue
		}
		if _, has := node.Allocatable[r]; !has && IsExtendedResourceName(r) {
			continue // a resource the node does not know: not the node's to account (as upstream)
		}
		capacity, inUse := amount(node.Allocatable, r), used.Requested(r)
		if want > capacity-inUse {
			out = append(out, shortfall{r, want - (capacity - inUse), insufficient(r, want, inUse, capacity)})
		}
	}
	return out
}

// IsExtendedResourceName reports whether r is an extended resource (a
// domain-qualified name outside kubernetes.io, not a quota's "requests."
// name).
func IsExtendedResourceName(r corev1.ResourceName) bool {
	s := string(r)
	if !strings.Contains(s, "/") || strings.HasPrefix(s, corev1.ResourceDefaultNamespacePrefix) {
		return false
	}
	return !strings.HasPrefix(s, "requests.")
}

// hostPort is one host port a pod binds.
type hostPort struct {
	ip       string
	protocol corev1.Protocol
	port     int32
}

// hostPorts are the host ports pod's init and regular containers bind
// (the protocol defaulted to TCP, the address to the wildcard).
func hostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		out = appendHostPorts(out, cs)
	}
	return out
}

func appendHostPorts(out []hostPort, cs []corev1.Container) []hostPort {
	for i := range cs {
		for _, p := range cs[i].Ports {
			if p.HostPort <= 0 {
				continue
			}
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			ip := p.HostIP
			if ip == "" {
				ip = wildcardIP
			}
			out = append(out, hostPort{ip: ip, protocol: proto, port: p.HostPort})
		}
	}
	return out
}

// hostPortConflict reports whether pod binds a host port (protocol and
// port, the wildcard address overlapping every address) an admitted pod
// binds.
func hostPortConflict(pod *corev1.Pod, used *Usage) bool {
	for _, w := range hostPorts(pod) {
		if used.conflicts(w) {
			return true
		}
	}
	return false
}

// MatchesNodeAffinity reports whether node satisfies the pod's nodeSelector
// and its required node affinity (any term; every expression of a term;
// an empty term matches nothing).
func MatchesNodeAffinity(pod *corev1.Pod, node Node) bool {
	for k, v := range pod.Spec.NodeSelector {
		if got, ok := node.Labels[k]; !ok || got != v {
			return false
		}
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if termMatches(term, node) {
			return true
		}
	}
	return false
}

func termMatches(term corev1.NodeSelectorTerm, node Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, r := range term.MatchExpressions {
		v, ok := node.Labels[r.Key]
		if !requirementMatches(r, v, ok) {
			return false
		}
	}
	for _, r := range term.MatchFields {
		if r.Key != "metadata.name" || !requirementMatches(r, node.Name, true) {
			return false
		}
	}
	return true
}

func requirementMatches(r corev1.NodeSelectorRequirement, v string, present bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return present && slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !present || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	}
	return false
}

// UntoleratedTaint returns the first taint of one of effects that the
// tolerations do not tolerate.
func UntoleratedTaint(taints []corev1.Taint, tolerations []corev1.Toleration, effects ...corev1.TaintEffect) (corev1.Taint, bool) {
	for _, t := range taints {
		if !slices.Contains(effects, t.Effect) {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool { return tolerates(tol, t) }) {
			return t, true
		}
	}
	return corev1.Taint{}, false
}

// tolerates reports whether tol tolerates taint (the API's rule).
func tolerates(tol corev1.Toleration, taint corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return tol.Value == taint.Value
	}
	return false
}

// AdmitUnderPressure decides, as the kubelet's eviction admission, whether
// pod may start while the node has the given pressure conditions: any
// pod when there are none or the pod is critical; under memory pressure
// alone, any pod but a BestEffort one that does not tolerate the
// memory-pressure taint; under any other pressure, none. qos is the pod's
// QoS class.
func AdmitUnderPressure(pod *corev1.Pod, qos corev1.PodQOSClass, conds []corev1.NodeConditionType) Decision {
	if len(conds) == 0 || podutil.IsCriticalPod(pod) {
		return Decision{}
	}
	if len(conds) == 1 && conds[0] == corev1.NodeMemoryPressure {
		if qos != corev1.PodQOSBestEffort {
			return Decision{}
		}
		taint := corev1.Taint{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}
		if _, untolerated := UntoleratedTaint([]corev1.Taint{taint}, pod.Spec.Tolerations, corev1.TaintEffectNoSchedule); !untolerated {
			return Decision{}
		}
	}
	return Decision{ReasonEvicted, fmt.Sprintf("The node had condition: %v. ", conds)}
}

// ReasonEvicted is the reason of a pod refused under node pressure (the
// eviction manager's reason, as upstream).
const ReasonEvicted = "Evicted"

// AdmitResources checks only pod's requested resources against node
// beside the pods admitted (their allocations): the part of AdmitBeside a
// resize must pass (the pod count and placement do not change).
func AdmitResources(pod *corev1.Pod, node Node, admitted []*corev1.Pod) Decision {
	for _, s := range shortfalls(pod, node, UsageOf(admitted)) {
		if s.resource != corev1.ResourcePods {
			return s.decision
		}
	}
	return Decision{}
}
