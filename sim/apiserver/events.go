package apiserver

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Event is a recorded Kubernetes event, as the recorder (Recorder) wrote
// it: a repeated event is one Event with a count.
type Event struct {
	// Name is the event object's name.
	Name string
	// Object is the object the event is about.
	Object corev1.ObjectReference
	// Type is Normal or Warning.
	Type    string
	Reason  string
	Message string
	// Source is the reporting component and host.
	Source corev1.EventSource
	// Count is how many times the event was recorded.
	Count int
	// First and Last are the times of the first and the latest.
	First, Last time.Time
}

// writeEvent stores ev: a new event (create), or, when patch is set, the
// new count, message and last time of the event of that name. It reports
// the stored event, or false when the write failed (the server is down,
// or the event to patch is gone). Caller must not hold mu.
func (s *Server) writeEvent(ev *corev1.Event, patch bool) (*corev1.Event, bool) {
	verb := VerbCreate
	if patch {
		verb = "patch"
	}
	s.count(verb, "event "+ev.Namespace+"/"+ev.Name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.down {
		s.log.Info("apiserver: event lost while down", "object", ev.InvolvedObject.Namespace+"/"+ev.InvolvedObject.Name, "reason", ev.Reason)
		return nil, false
	}
	k := key(ev.Namespace, ev.Name)
	e := Event{
		Name: ev.Name, Object: ev.InvolvedObject, Type: ev.Type, Reason: ev.Reason, Message: ev.Message,
		Source: ev.Source, Count: int(ev.Count), First: ev.FirstTimestamp.Time, Last: ev.LastTimestamp.Time,
	}
	i, ok := s.eventIndex[k]
	switch {
	case patch && !ok:
		return nil, false
	case patch:
		s.events[i].Count, s.events[i].Message, s.events[i].Last = e.Count, e.Message, e.Last
	case ok:
		return nil, false // AlreadyExists: the real recorder gives up
	default:
		s.eventIndex[k] = len(s.events)
		s.events = append(s.events, e)
	}
	return ev.DeepCopy(), true
}
