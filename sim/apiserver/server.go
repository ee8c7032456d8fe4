// Package apiserver is the simulator's kube-apiserver: an in-memory,
// deterministic store of pods, nodes, leases and events that implements the
// agent's apiserver ports (deps.PodAPI, deps.NodeAPI, deps.LeaseAPI, and
// deps.EventSink through a Recorder) the way client-go sees a real apiserver: server-assigned
// UIDs, one global resource version, watches replayed from a bounded
// history, optimistic concurrency, graceful pod deletion and
// k8s.io/apimachinery/pkg/api/errors values.
//
// Port methods are called by simulated tasks (agent code): every call is a
// scheduling point before and after the server handles it, like a request
// and its response on a network, and all waiting goes through the injected
// deps.Tasks. The scenario driver uses the non-blocking User side (another
// client, such as a user with kubectl) and the fault hooks between runs;
// faults affect the agent's calls only. Invariant checkers see every
// committed write through History and OnWrite.
//
// The server starts no goroutine, never reads the wall clock and never lets
// map order leak out: the same calls in the same order give the same
// objects, resource versions and history.
package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Compile-time proof that the server is the agent's apiserver.
var (
	_ deps.PodAPI   = (*Server)(nil)
	_ deps.NodeAPI  = (*Server)(nil)
	_ deps.LeaseAPI = (*Server)(nil)
)

// Default sizes used when Config leaves them zero.
const (
	// DefaultWatchWindow is how many pod changes stay replayable.
	DefaultWatchWindow = 1000
	// DefaultWatchQueue is how many undelivered events one watch may hold
	// before the server breaks it as too slow.
	DefaultWatchQueue = 1000
)

// Config is what New needs. Clock and Tasks are required.
type Config struct {
	// Clock stamps objects and history records.
	Clock deps.Clock
	// Tasks makes the signals watches block on and the sleeps of injected
	// latency, so the simulator schedules them.
	Tasks deps.Tasks
	// Rand draws the choices of random faults (Flaky); may be nil when
	// Flaky is not used.
	Rand deps.Rand
	// Log receives a line for every fault set and every fault that fires;
	// nil discards them.
	Log *slog.Logger
	// WatchWindow is how many pod changes the server keeps for watches
	// and stale reads; a watch from an older resource version fails with
	// ResourceExpired. 0 means DefaultWatchWindow.
	WatchWindow int
	// WatchQueue bounds the events waiting in one watch; a watch whose
	// reader falls further behind is broken. 0 means DefaultWatchQueue.
	WatchQueue int
	// Node, when set, is the agent's node: its calls are restricted as Node
	// authorization and NodeRestriction restrict a kubelet (only its own
	// pods, no reading of pods that do not exist, only mirror pods that
	// the node controls).
	Node string
}

// The resources, as the errors name them.
var (
	podsResource   = schema.GroupResource{Resource: "pods"}
	nodesResource  = schema.GroupResource{Resource: "nodes"}
	leasesResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
)

// Server is the simulated apiserver. Its methods are safe to call from any
// simulated task; the User side and the fault hooks are meant for the
// scenario driver between runs and never block.
type Server struct {
	clock      deps.Clock
	tasks      deps.Tasks
	rand       deps.Rand
	log        *slog.Logger
	window     int
	watchQueue int
	user       *User
	mu         sync.Mutex
	rv         uint64
	uids       uint64
	names      uint64
	watchIDs   uint64
	// node is the agent's node (Config.Node): its calls are restricted.
	node        string
	pods        map[string]*corev1.Pod
	nodes       map[string]*corev1.Node
	leases      map[string]*coordinationv1.Lease
	podLog      []podChange
	compactedRV uint64
	watches     []*podWatch
	history     []Record
	pending     []Record
	observers   []func(Record)
	events      []Event
	eventIndex  map[string]int
	faults      faults
	objs        objects
	csr         csrState
	tokens      map[string]issuedToken
	tokenSerial uint64
	// objWatches are the open configMap and secret watches; objDrops
	// counts the faults that broke them all.
	objWatches    []*objWatch
	objDrops      uint64
	objWatchCount map[string]int
	objGetCount   map[string]int
	// svc is the services' change window and open watches.
	svc serviceLog
	// requests counts the agent's requests by verb and resource.
	requests map[Request]int
}

// New returns an empty server.
func New(cfg Config) *Server {
	if cfg.Clock == nil || cfg.Tasks == nil {
		panic("apiserver: Config.Clock and Config.Tasks are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.WatchWindow <= 0 {
		cfg.WatchWindow = DefaultWatchWindow
	}
	if cfg.WatchQueue <= 0 {
		cfg.WatchQueue = DefaultWatchQueue
	}
	s := &Server{
		clock:         cfg.Clock,
		tasks:         cfg.Tasks,
		rand:          cfg.Rand,
		log:           cfg.Log,
		window:        cfg.WatchWindow,
		watchQueue:    cfg.WatchQueue,
		node:          cfg.Node,
		pods:          map[string]*corev1.Pod{},
		nodes:         map[string]*corev1.Node{},
		leases:        map[string]*coordinationv1.Lease{},
		eventIndex:    map[string]int{},
		tokens:        map[string]issuedToken{},
		objWatchCount: map[string]int{},
		objGetCount:   map[string]int{},
		requests:      map[Request]int{},
		objs: objects{
			configMaps:     map[string]*corev1.ConfigMap{},
			secrets:        map[string]*corev1.Secret{},
			services:       map[string]*corev1.Service{},
			runtimeClasses: map[string]*nodev1.RuntimeClass{},
			claims:         map[string]*corev1.PersistentVolumeClaim{},
			volumes:        map[string]*corev1.PersistentVolume{},
			trustBundles:   map[string]*certificatesv1.ClusterTrustBundle{},
		},
	}
	s.user = &User{s: s}
	return s
}

// User returns the scenario driver's side of the server.
func (s *Server) User() *User { return s.user }

// ResourceVersion is the resource version of the latest committed write.
func (s *Server) ResourceVersion() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv
}

// key is the store key of a namespaced object.
func key(namespace, name string) string { return namespace + "/" + name }

// now is the server's timestamp: object timestamps travel with second
// precision in the real API, so the simulated ones do too.
func (s *Server) now() time.Time { return s.clock.Now().Truncate(time.Second) }

// nextRV returns the resource version of a new write. Caller holds mu.
func (s *Server) nextRV() uint64 {
	s.rv++
	return s.rv
}

// nextUID returns a fresh UID formatted like a UUID. Caller holds mu.
func (s *Server) nextUID() string {
	s.uids++
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", s.uids)
}

// unlock releases mu and then hands the records committed under it to the
// observers, in order, so that an observer may call the server again.
func (s *Server) unlock() {
	recs := s.pending
	s.pending = nil
	obs := s.observers
	s.mu.Unlock()
	for _, r := range recs {
		for _, f := range obs {
			f(r.clone())
		}
	}
}

// request runs what every agent call goes through before the server looks
// at the store: the caller's context, the connection, injected latency (a
// scheduling point even when zero) and injected failures. It returns the
// error the call fails with, if any.
func (s *Server) request(ctx context.Context, verb, what string) error {
	s.count(verb, what)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", verb, what, err)
	}
	s.mu.Lock()
	down, d := s.faults.down, s.faults.latency[verb]
	s.mu.Unlock()
	if down {
		return s.refused(verb, what)
	}
	if err := s.tasks.Sleep(ctx, d); err != nil {
		return fmt.Errorf("%s %s: %w", verb, what, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.down {
		return s.refused(verb, what)
	}
	if err := s.flakyLocked(verb, what); err != nil {
		return err
	}
	if isWrite(verb) && s.faults.failWrites > 0 {
		s.faults.failWrites--
		s.log.Info("apiserver: injected write failure", "verb", verb, "object", what,
			"left", s.faults.failWrites, "err", s.faults.writeErr)
		return s.faults.writeErr
	}
	return nil
}

// response is the scheduling point between the server's answer and the
// caller seeing it.
func (s *Server) response() { s.tasks.Yield() }
