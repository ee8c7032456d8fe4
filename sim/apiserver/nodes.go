package apiserver

import (
	"context"
	"fmt"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// GetNode reads a node.
func (s *Server) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	if err := s.request(ctx, VerbGet, fmt.Sprintf("node %q", name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	n, ok := s.nodes[name]
	if !ok {
		return nil, apierrors.NewNotFound(nodesResource, name)
	}
	return n.DeepCopy(), nil
}

// CreateNode registers a node; the server assigns its UID, resource
// version and creation time.
func (s *Server) CreateNode(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	if err := s.request(ctx, VerbCreate, fmt.Sprintf("node %q", node.Name)); err != nil {
		return nil, err
	}
	defer s.response()
	if node.Name == "" {
		return nil, apierrors.NewBadRequest("create node: the name is required")
	}
	if node.ResourceVersion != "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("create node %q: resourceVersion should not be set on objects to be created", node.Name))
	}
	s.mu.Lock()
	defer s.unlock()
	if _, ok := s.nodes[node.Name]; ok {
		return nil, apierrors.NewAlreadyExists(nodesResource, node.Name)
	}
	n := node.DeepCopy()
	n.Namespace = ""
	n.UID = types.UID(s.nextUID())
	n.CreationTimestamp = metav1.NewTime(s.now())
	n.DeletionTimestamp, n.DeletionGracePeriodSeconds = nil, nil
	return s.putNodeLocked(VerbCreate, n).DeepCopy(), nil
}

// PatchNodeStatus applies patch, a strategic-merge patch, to the node's
// status subresource: only the status of the patched node is kept. A
// patch that changes nothing commits nothing.
func (s *Server) PatchNodeStatus(ctx context.Context, name string, patch []byte) (*corev1.Node, error) {
	if err := s.request(ctx, VerbPatchStatus, fmt.Sprintf("node %q", name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	old, ok := s.nodes[name]
	if !ok {
		return nil, apierrors.NewNotFound(nodesResource, name)
	}
	patched, err := applyPatch(old, patch, &corev1.Node{})
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patch status of node %q: %v", name, err))
	}
	if err := uidPrecondition(nodesResource, name, patched.UID, old.UID); err != nil {
		return nil, err
	}
	if equality.Semantic.DeepEqual(old.Status, patched.Status) {
		return old.DeepCopy(), nil
	}
	n := old.DeepCopy()
	n.Status = patched.Status
	return s.putNodeLocked(VerbPatchStatus, n).DeepCopy(), nil
}

// putNodeLocked commits n, a new object. Caller holds mu.
func (s *Server) putNodeLocked(verb string, n *corev1.Node) *corev1.Node {
	rv := s.nextRV()
	n.ResourceVersion = strconv.FormatUint(rv, 10)
	s.nodes[n.Name] = n
	s.record(Record{RV: rv, Actor: ActorAgent, Verb: verb, Kind: KindNode, Name: n.Name, UID: n.UID, Node: n})
	s.notifyObjWatchesLocked("nodes", n.Name)
	return n
}

// GetLease reads a lease.
func (s *Server) GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	if err := s.request(ctx, VerbGet, "lease "+key(namespace, name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	l, ok := s.leases[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(leasesResource, name)
	}
	return l.DeepCopy(), nil
}

// CreateLease creates a lease; the server assigns its UID, resource
// version and creation time.
func (s *Server) CreateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	what := "lease " + key(lease.Namespace, lease.Name)
	if err := s.request(ctx, VerbCreate, what); err != nil {
		return nil, err
	}
	defer s.response()
	if lease.Namespace == "" || lease.Name == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("create %s: the namespace and name are required", what))
	}
	if lease.ResourceVersion != "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("create %s: resourceVersion should not be set on objects to be created", what))
	}
	s.mu.Lock()
	defer s.unlock()
	if _, ok := s.leases[key(lease.Namespace, lease.Name)]; ok {
		return nil, apierrors.NewAlreadyExists(leasesResource, lease.Name)
	}
	l := lease.DeepCopy()
	l.UID = types.UID(s.nextUID())
	l.CreationTimestamp = metav1.NewTime(s.now())
	l.DeletionTimestamp, l.DeletionGracePeriodSeconds = nil, nil
	return s.putLeaseLocked(VerbCreate, l).DeepCopy(), nil
}

// UpdateLease replaces a lease's spec, labels, annotations and owner
// references, with its UID and resource version as preconditions (an empty
// resource version writes unconditionally). A write that changes nothing
// commits nothing.
func (s *Server) UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	if err := s.request(ctx, VerbUpdate, "lease "+key(lease.Namespace, lease.Name)); err != nil {
		return nil, err
	}
	defer s.response()
	s.mu.Lock()
	defer s.unlock()
	old, ok := s.leases[key(lease.Namespace, lease.Name)]
	if !ok {
		return nil, apierrors.NewNotFound(leasesResource, lease.Name)
	}
	if err := checkPreconditions(s, leasesResource, lease.Name, lease.UID, old.UID, lease.ResourceVersion, old.ResourceVersion, VerbUpdate); err != nil {
		return nil, err
	}
	in := lease.DeepCopy()
	l := old.DeepCopy()
	l.Spec = in.Spec
	l.Labels, l.Annotations, l.OwnerReferences = in.Labels, in.Annotations, in.OwnerReferences
	if equality.Semantic.DeepEqual(old, l) {
		return l, nil
	}
	return s.putLeaseLocked(VerbUpdate, l).DeepCopy(), nil
}

// putLeaseLocked commits l. Caller holds mu.
func (s *Server) putLeaseLocked(verb string, l *coordinationv1.Lease) *coordinationv1.Lease {
	rv := s.nextRV()
	l.ResourceVersion = strconv.FormatUint(rv, 10)
	s.leases[key(l.Namespace, l.Name)] = l
	s.record(Record{RV: rv, Actor: ActorAgent, Verb: verb, Kind: KindLease, Namespace: l.Namespace, Name: l.Name, UID: l.UID, Lease: l})
	return l
}
