package apiserver

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Compile-time proof that the recorder is the agent's event sink.
var _ deps.EventSink = (*Recorder)(nil)

// Recorder is one agent process's event recorder (deps.EventSink), as
// client-go's tools/record is the kubelet's: every event goes through
// client-go's EventCorrelator — similar events on an object aggregated,
// a repeated event counted on the event already written (a patch instead
// of a create), a per-object spam filter — on the simulator's clock, and
// what it lets through is written to the server. Like the real recorder
// it never fails nor blocks the caller. A new agent process gets a new
// Recorder: the correlator's memory dies with the process.
type Recorder struct {
	s      *Server
	clock  deps.Clock
	source corev1.EventSource

	mu   sync.Mutex
	corr *record.EventCorrelator
	seq  uint64
}

// NewRecorder returns a recorder writing to s, stamping events with clock
// and source (component "kubelet", host the node's name).
func NewRecorder(s *Server, clock deps.Clock, source corev1.EventSource) *Recorder {
	return &Recorder{
		s: s, clock: clock, source: source,
		// deps.Clock is a clock.PassiveClock (Now, Since): the spam
		// filter's token buckets and the aggregation window run on
		// virtual time.
		corr: record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: clock}),
	}
}

// Event records an event of eventType on obj.
func (r *Recorder) Event(obj *corev1.ObjectReference, eventType, reason, message string) {
	var ref corev1.ObjectReference
	if obj != nil {
		ref = *obj
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := metav1.NewTime(r.clock.Now())
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	// The real recorder names an event after the object and the time in
	// nanoseconds; virtual time repeats, so a sequence number keeps names
	// unique.
	r.seq++
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x.%d", ref.Name, now.UnixNano(), r.seq), Namespace: ns},
		InvolvedObject: ref,
		Reason:         reason,
		Message:        message,
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
		Type:           eventType,
		Source:         r.source,
	}
	res, err := r.corr.EventCorrelate(ev)
	if err != nil || res.Skip {
		return
	}
	if stored, ok := r.s.writeEvent(res.Event, len(res.Patch) > 0); ok {
		r.corr.UpdateState(stored)
	}
}
