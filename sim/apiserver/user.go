package apiserver

import (
	"slices"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// User is the scenario driver's side of the server: a client such as a
// user with kubectl or a controller. Its methods never block nor yield, so
// the driver calls them between runs; injected faults do not affect them.
// Writes are recorded in the history with ActorUser and reach the open
// watches at once (a task blocked in Next wakes up).
type User struct{ s *Server }

// CreatePod creates a pod. The server assigns its UID, resource version,
// creation time and generation and fills in the spec defaults; the status
// is kept (for scenarios that start from an existing pod), its phase
// defaulting to Pending. An empty namespace means "default"; a pod with
// generateName and no name gets a generated one.
func (u *User) CreatePod(pod *corev1.Pod) (*corev1.Pod, error) {
	s := u.s
	p := pod.DeepCopy()
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	s.mu.Lock()
	defer s.unlock()
	created, err := s.createPodLocked(ActorUser, p)
	if err != nil {
		return nil, err
	}
	return created.DeepCopy(), nil
}

// UpdatePod replaces a pod's spec, labels, annotations, owner references
// and finalizers (status and server metadata are kept), with its UID and
// resource version as preconditions (an empty resource version updates
// unconditionally). Unlike the real apiserver it lets any spec field
// change, nodeName included, so scenarios can move pods between nodes. A
// spec change bumps the generation.
func (u *User) UpdatePod(pod *corev1.Pod) (*corev1.Pod, error) {
	s := u.s
	s.mu.Lock()
	defer s.unlock()
	old, ok := s.pods[key(pod.Namespace, pod.Name)]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, pod.Name)
	}
	if err := uidPrecondition(podsResource, pod.Name, pod.UID, old.UID); err != nil {
		return nil, err
	}
	if err := rvPrecondition(podsResource, pod.Name, pod.ResourceVersion, old.ResourceVersion); err != nil {
		return nil, err
	}
	return s.updatePodLocked(old, pod.DeepCopy()).DeepCopy(), nil
}

// UpdatePodSpec changes a pod's spec with mutate, unconditionally.
func (u *User) UpdatePodSpec(namespace, name string, mutate func(*corev1.PodSpec)) (*corev1.Pod, error) {
	s := u.s
	s.mu.Lock()
	defer s.unlock()
	old, ok := s.pods[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	in := old.DeepCopy()
	mutate(&in.Spec)
	return s.updatePodLocked(old, in).DeepCopy(), nil
}

// SetPodStatus writes a pod's status, unconditionally, as another writer
// than the agent would.
func (u *User) SetPodStatus(namespace, name string, status corev1.PodStatus) (*corev1.Pod, error) {
	s := u.s
	s.mu.Lock()
	defer s.unlock()
	old, ok := s.pods[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	return s.setPodStatusLocked(ActorUser, VerbUpdateStatus, old, *status.DeepCopy()).DeepCopy(), nil
}

// DeletePodGracefully deletes a pod like `kubectl delete` (a nil grace
// period means the pod's terminationGracePeriodSeconds): a pod bound to a
// node is only marked (deletionTimestamp = now + grace,
// deletionGracePeriodSeconds = grace) and stays until the node deletes it
// with grace 0; an unbound or finished pod, or a grace of 0, deletes it at
// once. A second delete can only shorten the grace period.
func (u *User) DeletePodGracefully(namespace, name string, gracePeriodSeconds *int64) error {
	s := u.s
	s.mu.Lock()
	defer s.unlock()
	old, ok := s.pods[key(namespace, name)]
	if !ok {
		return apierrors.NewNotFound(podsResource, name)
	}
	s.gracefulDeleteLocked(ActorUser, old, gracePeriodSeconds)
	return nil
}

// GetPod reads a pod (fresh, whatever the faults).
func (u *User) GetPod(namespace, name string) (*corev1.Pod, error) {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	return p.DeepCopy(), nil
}

// ListAllPods returns every pod, sorted by namespace and name.
func (u *User) ListAllPods() []*corev1.Pod {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(s.pods))
	for _, k := range sortedKeys(s.pods) {
		out = append(out, s.pods[k].DeepCopy())
	}
	return out
}

// Nodes returns every node, sorted by name.
func (u *User) Nodes() []*corev1.Node {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*corev1.Node, 0, len(s.nodes))
	for _, k := range sortedKeys(s.nodes) {
		out = append(out, s.nodes[k].DeepCopy())
	}
	return out
}

// GetLease reads a lease.
func (u *User) GetLease(namespace, name string) (*coordinationv1.Lease, error) {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.leases[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(leasesResource, name)
	}
	return l.DeepCopy(), nil
}

// Events returns the recorded events in the order they were first seen.
func (u *User) Events() []Event {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// updatePodLocked writes in's spec and user metadata over old. Caller
// holds mu and owns in.
func (s *Server) updatePodLocked(old, in *corev1.Pod) *corev1.Pod {
	p := old.DeepCopy()
	p.Labels, p.Annotations = in.Labels, in.Annotations
	p.OwnerReferences, p.Finalizers = in.OwnerReferences, in.Finalizers
	p.Spec = in.Spec
	defaultPodSpec(&p.Spec)
	if !equality.Semantic.DeepEqual(old.Spec, p.Spec) {
		p.Generation++
	}
	if equality.Semantic.DeepEqual(old, p) {
		return old
	}
	return s.putPodLocked(ActorUser, VerbUpdate, old, p)
}

// EditNode changes node name as an administrator would (labels, taints):
// edit works on a copy, which is stored with a new resource version. It
// reports false when there is no such node.
func (u *User) EditNode(name string, edit func(*corev1.Node)) bool {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[name]
	if !ok {
		return false
	}
	n = n.DeepCopy()
	edit(n)
	rv := s.nextRV()
	n.ResourceVersion = strconv.FormatUint(rv, 10)
	s.nodes[name] = n
	s.record(Record{RV: rv, Actor: ActorUser, Verb: VerbUpdate, Kind: KindNode, Name: name, UID: n.UID, Node: n})
	s.notifyObjWatchesLocked("nodes", name)
	return true
}
