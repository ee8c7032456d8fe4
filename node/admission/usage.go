package admission

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Usage is what admitted pods take of a node, as admission counts it:
// their requests summed by resource, how many they are and the host ports
// they bind. It is kept up to date as pods come and go (Add, Remove), so
// that a decision on one more pod (AdmitBeside) costs that pod's size,
// not the number of pods admitted. The zero Usage is empty and ready.
type Usage struct {
	requested corev1.ResourceList
	pods      int
	// ports counts the bindings of each host port (protocol and port) by
	// host IP; an IP whose count drops to zero is deleted.
	ports map[portKey]map[string]int
}

// portKey is a host port without its address.
type portKey struct {
	protocol corev1.Protocol
	port     int32
}

// wildcardIP is the host address of a port bound on every address.
const wildcardIP = "0.0.0.0"

// PodUsage is what one pod takes of a node (see UsageOfPod).
type PodUsage struct {
	requests corev1.ResourceList
	ports    []hostPort
}

// UsageOfPod is what pod takes of a node: its requests (PodRequests of
// the pod as given, so pass it with its allocated resources) and the host
// ports it binds.
func UsageOfPod(pod *corev1.Pod) PodUsage {
	return PodUsage{requests: PodRequests(pod), ports: hostPorts(pod)}
}

// UsageOf is what pods take of a node together.
func UsageOf(pods []*corev1.Pod) *Usage {
	u := &Usage{}
	for _, p := range pods {
		u.Add(UsageOfPod(p))
	}
	return u
}

// Add counts one more pod, which takes p.
func (u *Usage) Add(p PodUsage) {
	if u.requested == nil {
		u.requested = corev1.ResourceList{}
	}
	addTo(u.requested, p.requests)
	u.pods++
	for _, h := range p.ports {
		if u.ports == nil {
			u.ports = map[portKey]map[string]int{}
		}
		k := portKey{h.protocol, h.port}
		if u.ports[k] == nil {
			u.ports[k] = map[string]int{}
		}
		u.ports[k][h.ip]++
	}
}

// Remove stops counting a pod that took p (as given to Add).
func (u *Usage) Remove(p PodUsage) {
	for name, q := range p.requests {
		sum := u.requested[name]
		sum.Sub(q)
		u.requested[name] = sum
	}
	u.pods--
	for _, h := range p.ports {
		k := portKey{h.protocol, h.port}
		if u.ports[k][h.ip]--; u.ports[k][h.ip] <= 0 {
			delete(u.ports[k], h.ip)
		}
		if len(u.ports[k]) == 0 {
			delete(u.ports, k)
		}
	}
}

// Pods is how many pods are counted.
func (u *Usage) Pods() int { return u.pods }

// Requested is how much of r the pods request, in its base unit
// (millicores for cpu).
func (u *Usage) Requested(r corev1.ResourceName) int64 { return amount(u.requested, r) }

// conflicts reports whether binding w would conflict with a counted
// binding: the same protocol and port on the same address, the wildcard
// address overlapping every address.
func (u *Usage) conflicts(w hostPort) bool {
	bound := u.ports[portKey{w.protocol, w.port}]
	if len(bound) == 0 {
		return false
	}
	return w.ip == wildcardIP || bound[w.ip] > 0 || bound[wildcardIP] > 0
}

// Admitted is the set of admitted pods by UID, with their Usage kept
// beside them. It is not safe for concurrent use.
type Admitted struct {
	pods map[types.UID]admittedPod
	used Usage
}

type admittedPod struct {
	pod   *corev1.Pod
	usage PodUsage
}

// NewAdmitted returns an empty set.
func NewAdmitted() *Admitted { return &Admitted{pods: map[types.UID]admittedPod{}} }

// Set admits pod (as allocated), or replaces the admitted pod of its UID
// (a resize changed its allocation).
func (s *Admitted) Set(pod *corev1.Pod) {
	if old, ok := s.pods[pod.UID]; ok {
		s.used.Remove(old.usage)
	}
	e := admittedPod{pod: pod, usage: UsageOfPod(pod)}
	s.pods[pod.UID] = e
	s.used.Add(e.usage)
}

// Remove drops pod uid, reporting whether it was admitted.
func (s *Admitted) Remove(uid types.UID) bool {
	old, ok := s.pods[uid]
	if !ok {
		return false
	}
	delete(s.pods, uid)
	s.used.Remove(old.usage)
	return true
}

// Pod is the admitted pod of uid.
func (s *Admitted) Pod(uid types.UID) (*corev1.Pod, bool) {
	e, ok := s.pods[uid]
	return e.pod, ok
}

// Len is how many pods are admitted.
func (s *Admitted) Len() int { return len(s.pods) }

// Pods are the admitted pods, in no particular order.
func (s *Admitted) Pods() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(s.pods))
	for _, e := range s.pods {
		out = append(out, e.pod)
	}
	return out
}

// Usage is what the admitted pods take of the node; it changes with the
// set.
func (s *Admitted) Usage() *Usage { return &s.used }
