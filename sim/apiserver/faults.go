package apiserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The verbs that Latency accepts and that history records name.
const (
	VerbGet    = "get"
	VerbList   = "list"
	VerbWatch  = "watch"
	VerbCreate = "create"
	VerbUpdate = "update"
	// VerbUpdateStatus is a user's status write (history only).
	VerbUpdateStatus = "updateStatus"
	VerbPatchStatus  = "patchStatus"
	VerbDelete       = "delete"
)

var verbs = []string{VerbGet, VerbList, VerbWatch, VerbCreate, VerbUpdate, VerbPatchStatus, VerbDelete}

func isWrite(verb string) bool {
	switch verb {
	case VerbCreate, VerbUpdate, VerbPatchStatus, VerbDelete:
		return true
	}
	return false
}

// faults are the failures the scenario driver has injected.
type faults struct {
	failWrites int
	writeErr   error
	conflicts  int
	latency    map[string]time.Duration
	stale      time.Duration
	down       bool
	flaky      int
}

// apiserverAddr is where the simulated apiserver pretends to listen.
var apiserverAddr = &net.TCPAddr{IP: net.IPv4(10, 96, 0, 1), Port: 443}

// refused is the error of a call made while the server is down: what a
// client sees when nothing listens (errors.Is(err, syscall.ECONNREFUSED)).
func (s *Server) refused(verb, what string) error {
	return fmt.Errorf("%s %s: %w", verb, what, &net.OpError{
		Op: "dial", Net: "tcp", Addr: apiserverAddr,
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED),
	})
}

// flakyLocked fails a call at random when Flaky is set. Caller holds mu.
func (s *Server) flakyLocked(verb, what string) error {
	if s.faults.flaky <= 0 || s.rand.IntN(100) >= s.faults.flaky {
		return nil
	}
	var err error
	switch s.rand.IntN(3) {
	case 0:
		err = apierrors.NewInternalError(fmt.Errorf("injected failure of %s %s", verb, what))
	case 1:
		err = apierrors.NewTimeoutError(fmt.Sprintf("injected timeout of %s %s", verb, what), 1)
	default:
		err = apierrors.NewTooManyRequests(fmt.Sprintf("injected throttling of %s %s", verb, what), 1)
	}
	s.log.Info("apiserver: injected random failure", "verb", verb, "object", what, "err", err)
	return err
}

// injectConflictLocked reports whether a write that carries a resource
// version must answer Conflict because Conflicts asked for one, counting
// it. Caller holds mu.
func (s *Server) injectConflictLocked(rv, verb, what string) bool {
	if rv == "" || s.faults.conflicts <= 0 {
		return false
	}
	s.faults.conflicts--
	s.log.Info("apiserver: injected conflict", "verb", verb, "object", what, "left", s.faults.conflicts)
	return true
}

// errModified is the reason of every resource-version conflict.
var errModified = errors.New("the object has been modified; please apply your changes to the latest version and try again")

// FailWrites makes the agent's next n writes (create, update, status patch,
// delete) fail with err before touching the store; a nil err means an
// InternalError. n <= 0 cancels.
func (s *Server) FailWrites(n int, err error) {
	if err == nil {
		err = apierrors.NewInternalError(errors.New("injected write failure"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.failWrites, s.faults.writeErr = max(n, 0), err
	s.log.Info("apiserver fault: fail writes", "n", n, "err", err)
}

// Conflicts makes the agent's next n writes that carry a resource version
// (lease updates; status patches carry none) answer Conflict even when it
// is fresh.
// n <= 0 cancels.
func (s *Server) Conflicts(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.conflicts = max(n, 0)
	s.log.Info("apiserver fault: conflicts", "n", n)
}

// WriteFaultsPending reports whether injected write failures or conflicts
// are still waiting for the agent's writes.
func (s *Server) WriteFaultsPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults.failWrites > 0 || s.faults.conflicts > 0
}

// Latency makes every agent call of verb (one of the Verb constants) wait d
// of the clock's time before the server handles it; d <= 0 removes it.
func (s *Server) Latency(verb string, d time.Duration) {
	if !slices.Contains(verbs, verb) {
		panic(fmt.Sprintf("apiserver: Latency of unknown verb %q (want one of %v)", verb, verbs))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		delete(s.faults.latency, verb)
	} else {
		if s.faults.latency == nil {
			s.faults.latency = map[string]time.Duration{}
		}
		s.faults.latency[verb] = d
	}
	s.log.Info("apiserver fault: latency", "verb", verb, "latency", d)
}

// DropWatches breaks every open watch: its next Next returns an error (and
// every later one too), so the agent must list again. Undelivered events of
// those watches are lost.
func (s *Server) DropWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.breakWatchesLocked(func(w *podWatch) error {
		return fmt.Errorf("watch pods on node %q: connection dropped: %w", w.node, io.ErrUnexpectedEOF)
	})
	n += s.breakObjWatchesLocked()
	n += s.breakServiceWatchesLocked(errServiceWatchDropped)
	s.log.Info("apiserver fault: drop watches", "watches", n)
}

// StaleReads makes the agent's ListPods answer the pods as they
// were d ago (never older than the watch window, nor than the resource
// version a list asks for at least), with that older resource version:
// like a lagging cache. d <= 0 reads fresh again.
func (s *Server) StaleReads(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.stale = max(d, 0)
	s.log.Info("apiserver fault: stale reads", "lag", d)
}

// Down makes every agent call fail at once with a connection-refused error
// while down is true; going down also breaks every open watch and loses
// the events the agent records meanwhile.
func (s *Server) Down(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.down = down
	n := 0
	if down {
		n = s.breakWatchesLocked(func(w *podWatch) error {
			return s.refused(VerbWatch, fmt.Sprintf("pods on node %q", w.node))
		})
		n += s.breakObjWatchesLocked() + len(s.csr.waiters)
		n += s.breakServiceWatchesLocked(func() error { return s.refused(VerbWatch, "services of all namespaces") })
		s.notifyCSRLocked()
	}
	s.log.Info("apiserver fault: down", "down", down, "watchesBroken", n)
}

// Flaky makes each agent call fail, with probability percent/100 drawn from
// Config.Rand, with an InternalError, a Timeout or a TooManyRequests error
// (also drawn). 0 turns it off.
func (s *Server) Flaky(percent int) {
	if percent > 0 && s.rand == nil {
		panic("apiserver: Flaky needs Config.Rand")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.flaky = min(max(percent, 0), 100)
	s.log.Info("apiserver fault: flaky", "percent", percent)
}

// ClearFaults removes every injected fault (pending write failures and
// conflicts, latency, stale reads, down, flakiness). Watches already broken
// stay broken.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = faults{}
	s.log.Info("apiserver fault: cleared")
}

// Compact forgets the whole pod and service change history, as etcd
// compaction does: a watch from any resource version before now fails
// with ResourceExpired, and stale reads cannot reach further back than
// now.
func (s *Server) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.podLog = nil
	s.compactedRV = s.rv
	s.compactServicesLocked()
	s.log.Info("apiserver fault: compact", "rv", s.rv)
}
