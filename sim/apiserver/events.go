package apiserver

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Event is a recorded Kubernetes event. Identical events (same object,
// type, reason and message) are recorded once, with a count.
type Event struct {
	// Object is the object the event is about.
	Object corev1.ObjectReference
	// Type is Normal or Warning.
	Type    string
	Reason  string
	Message string
	// Count is how many times the event was recorded.
	Count int
	// First and Last are the clock's times of the first and the latest.
	First, Last time.Time
}

// eventKey identifies identical events; the object's resource version is
// not part of it.
type eventKey struct {
	obj                  corev1.ObjectReference
	typ, reason, message string
}

// Event records an event about obj. Like the real event recorder it never
// fails nor blocks the caller; while the server is down the event is lost.
func (s *Server) Event(obj *corev1.ObjectReference, eventType, reason, message string) {
	var ref corev1.ObjectReference
	if obj != nil {
		ref = *obj
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.down {
		s.log.Info("apiserver: event lost while down", "object", ref.Namespace+"/"+ref.Name, "reason", reason)
		return
	}
	k := eventKey{obj: ref, typ: eventType, reason: reason, message: message}
	k.obj.ResourceVersion = ""
	now := s.clock.Now()
	if i, ok := s.eventIndex[k]; ok {
		s.events[i].Count++
		s.events[i].Last = now
		return
	}
	s.eventIndex[k] = len(s.events)
	s.events = append(s.events, Event{Object: ref, Type: eventType, Reason: reason, Message: message, Count: 1, First: now, Last: now})
}
