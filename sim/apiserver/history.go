package apiserver

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Who made a write.
const (
	// ActorAgent is the agent, through the deps ports.
	ActorAgent = "agent"
	// ActorUser is the scenario driver, through User.
	ActorUser = "user"
)

// Record verbs besides the Verb constants.
const (
	// VerbGracefulDelete marks a pod for deletion (sets or shortens its
	// deletionTimestamp) without removing it.
	VerbGracefulDelete = "gracefulDelete"
	// VerbUpdateEphemeralContainers writes the pods/ephemeralcontainers
	// subresource (kubectl debug).
	VerbUpdateEphemeralContainers = "updateEphemeralContainers"
	// VerbResize writes the pods/resize subresource (kubectl patch
	// --subresource resize).
	VerbResize = "resize"
)

// The kinds of recorded objects.
const (
	KindPod   = "Pod"
	KindNode  = "Node"
	KindLease = "Lease"
)

// Record is one committed write, for invariant checkers.
type Record struct {
	// RV is the write's resource version (strictly increasing).
	RV uint64
	// At is the clock's time of the write.
	At time.Time
	// Actor says who wrote: ActorAgent or ActorUser.
	Actor string
	// Verb is VerbCreate, VerbUpdate, VerbUpdateStatus (a user's status
	// write), VerbPatchStatus (the agent's), VerbGracefulDelete
	// or VerbDelete (the object is gone).
	Verb string
	// Kind is KindPod, KindNode or KindLease.
	Kind      string
	Namespace string
	Name      string
	UID       types.UID
	// Exactly one of Pod, Node and Lease is set: the object after the
	// write (for VerbDelete, its last state at the delete's version).
	Pod   *corev1.Pod
	Node  *corev1.Node
	Lease *coordinationv1.Lease
}

// clone deep-copies the record's object.
func (r Record) clone() Record {
	r.Pod = r.Pod.DeepCopy()
	r.Node = r.Node.DeepCopy()
	r.Lease = r.Lease.DeepCopy()
	return r
}

// record commits r to the history and queues it for the observers, which
// see it once mu is released. The object in r must never be mutated again
// (store objects are replaced, never changed). Caller holds mu.
func (s *Server) record(r Record) {
	r.At = s.clock.Now()
	s.history = append(s.history, r)
	if len(s.observers) > 0 {
		s.pending = append(s.pending, r)
	}
}

// History returns every committed write so far, oldest first (deep copies).
// It is kept for the life of the server.
func (s *Server) History() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Record, len(s.history))
	for i, r := range s.history {
		out[i] = r.clone()
	}
	return out
}

// OnWrite calls fn with every write committed from now on (a deep copy), in
// resource version order, right after the write and before its caller
// sees the answer. fn may call the server.
func (s *Server) OnWrite(fn func(Record)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observers = append(s.observers, fn)
}
