// Package podnet serves a fake runtime's pod network on real sockets.
// Every address the runtime hands out (a loopback address per sandbox with
// fakecri.Config.LoopbackCIDR, Config.NodeAddress for host-network
// sandboxes) listens on the ports its running containers listen on and
// answers their scripted HTTP, TCP and gRPC health endpoints, as
// fakecri.Runtime's AnswerHTTP, AnswerTCP, AnswerGRPC and ListeningAt
// decide (the rule the simulator's probe network follows too), so that
// real probers — an upstream kubelet's, lockstep's node/real/probenet —
// reach them.
//
// It runs beside a runtime on the real clock (`lockstep fakecri
// --pod-network`, the daemon's in-process fake), never in the simulator:
// it starts goroutines, opens sockets and keeps wall-clock timers.
package podnet

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/lockstep-dev/lockstep/fakecri"
)

// Server keeps an address's sockets in step with what the runtime says it
// listens on: on every change the runtime reports (WatchAddresses) and
// whenever a script's timeline or a scheduled exit is due.
type Server struct {
	rt   *fakecri.Runtime
	log  *slog.Logger
	http *http.Server
	grpc *grpc.Server

	mu    sync.Mutex // guards dirty; never held across a runtime call
	dirty map[string]bool
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}

	recMu  sync.Mutex // serializes reconciles; guards the fields below
	socks  map[string]map[int]*socket
	due    map[string]time.Time // wall time of each address's next scheduled change
	failed map[netip.AddrPort]string
}

// Start serves rt's addresses until Stop. log receives bind failures
// (nil: discarded).
func Start(rt *fakecri.Runtime, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{
		rt:     rt,
		log:    log,
		dirty:  map[string]bool{},
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		socks:  map[string]map[int]*socket{},
		due:    map[string]time.Time{},
		failed: map[netip.AddrPort]string{},
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // gRPC clients speak HTTP/2 with prior knowledge
	s.http = &http.Server{
		Handler:           s,
		Protocols:         protocols,
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	s.grpc = grpc.NewServer()
	healthpb.RegisterHealthServer(s.grpc, health{rt: rt})
	rt.WatchAddresses(s.mark)
	for _, addr := range rt.Addresses() {
		s.mark(addr)
	}
	go s.loop()
	return s
}

// Stop closes every socket and stops following the runtime.
func (s *Server) Stop() {
	s.rt.WatchAddresses(nil)
	close(s.stop)
	<-s.done
	s.recMu.Lock()
	for addr, ports := range s.socks {
		for port, sock := range ports {
			sock.close()
			delete(ports, port)
		}
		delete(s.socks, addr)
	}
	s.recMu.Unlock()
	_ = s.http.Close()
	s.grpc.Stop()
}

// Sync brings every address's sockets to what the runtime says at its
// clock's now, before it returns. The server does so by itself shortly
// after every change; Sync is for a caller that moved the runtime's clock
// or must not race the server (tests).
func (s *Server) Sync() {
	addrs := map[string]bool{}
	for _, a := range s.rt.Addresses() {
		addrs[a] = true
	}
	s.mu.Lock()
	for a := range s.dirty {
		addrs[a] = true
	}
	clear(s.dirty)
	s.mu.Unlock()
	s.recMu.Lock()
	defer s.recMu.Unlock()
	for a := range s.socks {
		addrs[a] = true
	}
	for a := range s.due {
		addrs[a] = true
	}
	for a := range addrs {
		s.reconcile(a)
	}
}

// mark queues addr for a reconcile. The runtime calls it with its lock
// held: it must not block.
func (s *Server) mark(addr string) {
	s.mu.Lock()
	s.dirty[addr] = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop reconciles the addresses marked and those whose next change is
// due, until Stop.
func (s *Server) loop() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.recMu.Lock()
		wait, scheduled := s.untilDue()
		s.recMu.Unlock()
		if !scheduled {
			wait = time.Hour
		}
		timer.Reset(wait)
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-timer.C:
		}
		s.mu.Lock()
		addrs := s.dirty
		s.dirty = map[string]bool{}
		s.mu.Unlock()
		s.recMu.Lock()
		now := time.Now()
		for a, t := range s.due {
			if !t.After(now) {
				addrs[a] = true
			}
		}
		for a := range addrs {
			s.reconcile(a)
		}
		s.recMu.Unlock()
	}
}

// untilDue is the wait until the earliest scheduled change. recMu held.
func (s *Server) untilDue() (time.Duration, bool) {
	var first time.Time
	for _, t := range s.due {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	if first.IsZero() {
		return 0, false
	}
	return max(time.Until(first), 0), true
}

// reconcile opens, closes and replaces addr's sockets to match
// ListeningAt. recMu held.
func (s *Server) reconcile(addr string) {
	ls, next := s.rt.ListeningAt(addr)
	if next > 0 {
		s.due[addr] = time.Now().Add(next)
	} else {
		delete(s.due, addr)
	}
	have := s.socks[addr]
	want := make(map[int]fakecri.Listener, len(ls))
	for _, l := range ls {
		want[l.Port] = l
	}
	for port, sock := range have {
		if l, ok := want[port]; !ok || l.ContainerID != sock.containerID || l.Unanswered != sock.unanswered {
			sock.close()
			delete(have, port)
		}
	}
	for _, l := range ls {
		if _, ok := have[l.Port]; ok {
			continue
		}
		ap, err := addrPort(addr, l.Port)
		if err == nil {
			var sock *socket
			if sock, err = s.open(ap, l); err == nil {
				if have == nil {
					have = map[int]*socket{}
					s.socks[addr] = have
				}
				have[l.Port] = sock
				delete(s.failed, ap)
				continue
			}
		}
		if msg := err.Error(); s.failed[ap] != msg {
			s.failed[ap] = msg
			s.log.Warn("podnet: cannot serve a container's port", "address", net.JoinHostPort(addr, strconv.Itoa(l.Port)), "container", l.ContainerID, "err", err)
		}
	}
	if len(have) == 0 {
		delete(s.socks, addr)
	}
}

// addrPort parses addr and port.
func addrPort(addr string, port int) (netip.AddrPort, error) {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(a, uint16(port)), nil
}

// open binds a socket for l: one whose connects are never answered, or one
// the HTTP server accepts on.
func (s *Server) open(ap netip.AddrPort, l fakecri.Listener) (*socket, error) {
	sock := &socket{containerID: l.ContainerID, unanswered: l.Unanswered, conns: map[net.Conn]bool{}}
	if l.Unanswered {
		lis, filler, err := listenUnanswered(ap)
		if err != nil {
			return nil, err
		}
		sock.lis, sock.filler = lis, filler
		return sock, nil
	}
	lis, err := net.Listen("tcp", ap.String())
	if err != nil {
		return nil, err
	}
	sock.lis = &trackingListener{Listener: lis, sock: sock}
	go func() { _ = s.http.Serve(sock.lis) }()
	return sock, nil
}

// socket is one address:port that listens.
type socket struct {
	containerID string
	unanswered  bool
	lis         net.Listener
	filler      net.Conn // fills an unanswered socket's accept queue

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

// close stops listening and closes every connection accepted, as the
// container's process dying would.
func (sock *socket) close() {
	_ = sock.lis.Close()
	if sock.filler != nil {
		_ = sock.filler.Close()
	}
	sock.mu.Lock()
	sock.closed = true
	conns := sock.conns
	sock.conns = nil
	sock.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}

// trackingListener records the connections it accepts in its socket, so
// that closing the socket closes them.
type trackingListener struct {
	net.Listener
	sock *socket
}

// Accept accepts a connection and records it.
func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, sock: l.sock}
	l.sock.mu.Lock()
	defer l.sock.mu.Unlock()
	if l.sock.closed {
		_ = c.Close()
		return tc, nil
	}
	l.sock.conns[tc] = true
	return tc, nil
}

// trackedConn forgets itself in its socket when closed.
type trackedConn struct {
	net.Conn
	sock *socket
}

// Close closes the connection.
func (c *trackedConn) Close() error {
	c.sock.mu.Lock()
	delete(c.sock.conns, c)
	c.sock.mu.Unlock()
	return c.Conn.Close()
}

// endpointOf is the runtime endpoint a local address is.
func endpointOf(local net.Addr) (fakecri.Endpoint, bool) {
	tcp, ok := local.(*net.TCPAddr)
	if !ok {
		return fakecri.Endpoint{}, false
	}
	ap := tcp.AddrPort()
	return fakecri.Endpoint{Addr: ap.Addr().Unmap().String(), Port: int(ap.Port())}, true
}

// ServeHTTP answers a request on a container's port: gRPC to the health
// service, anything else from the container's FAKECRI_HTTP script. A
// request answered "down" (or reaching a port that closed meanwhile) has
// its connection closed unanswered; one answered "hang" waits until the
// client gives up or the container stops.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
		s.grpc.ServeHTTP(w, r)
		return
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	ep, ok := endpointOf(local)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	a := s.rt.AnswerHTTP(ep, strings.TrimPrefix(r.URL.Path, "/"))
	switch a.Outcome {
	case fakecri.Answered:
	case fakecri.Unanswered:
		<-r.Context().Done()
		panic(http.ErrAbortHandler)
	default:
		panic(http.ErrAbortHandler) // closes the connection without an answer
	}
	if a.Location != "" {
		w.Header().Set("Location", a.Location)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(a.Status)
	_, _ = io.WriteString(w, fakecri.HTTPBody(a.Status))
}

// health is the grpc.health.v1 service of every container port.
type health struct {
	healthpb.UnimplementedHealthServer
	rt *fakecri.Runtime
}

// Check answers from the container's FAKECRI_GRPC script.
func (h health) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	p, _ := peer.FromContext(ctx)
	var ep fakecri.Endpoint
	ok := p != nil
	if ok {
		ep, ok = endpointOf(p.LocalAddr)
	}
	if !ok {
		return nil, status.Error(codes.Internal, "podnet: no local address")
	}
	a := h.rt.AnswerGRPC(ep, req.GetService())
	switch a.Outcome {
	case fakecri.Answered:
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_ServingStatus(a.Status)}, nil
	case fakecri.Unanswered:
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return nil, status.Errorf(codes.Unavailable, "%s: %s", ep, a.Outcome)
}
