package fakecri

import (
	"fmt"
	"slices"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Endpoint names where a connection goes: Port at Addr (a pod IP, or
// Config.NodeAddress for host-network pods), or, with Sandbox set, Port
// inside that sandbox's own network namespace (how a port-forward reaches
// it; Addr is then ignored).
type Endpoint struct {
	Addr    string
	Port    int
	Sandbox string
}

// String is "addr:port", or "sandbox <id> port <port>".
func (ep Endpoint) String() string {
	if ep.Sandbox != "" {
		return fmt.Sprintf("sandbox %s port %d", ep.Sandbox, ep.Port)
	}
	return fmt.Sprintf("%s:%d", ep.Addr, ep.Port)
}

// Outcome is how an attempt to reach an endpoint ends.
type Outcome uint8

const (
	// NoRoute: no ready sandbox has the address.
	NoRoute Outcome = iota + 1
	// Refused: nothing listens on the port (the connection is refused).
	Refused
	// Unanswered: nothing answers, the connect or the request, until the
	// caller gives up (a scripted "hang").
	Unanswered
	// Reset: the connection was accepted, then closed without an answer
	// (a request the script answers "down").
	Reset
	// Answered: the connection was accepted (TCP) or the request answered.
	Answered
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case NoRoute:
		return "no route"
	case Refused:
		return "refused"
	case Unanswered:
		return "unanswered"
	case Reset:
		return "reset"
	case Answered:
		return "answered"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Answer is what an endpoint answered.
type Answer struct {
	Outcome Outcome
	// ContainerID is the container listening on the port ("" when nothing
	// does).
	ContainerID string
	// Status is the HTTP status code, or for gRPC the grpc.health.v1
	// serving status (0 UNKNOWN, 1 SERVING, 2 NOT_SERVING, 3
	// SERVICE_UNKNOWN); 0 unless Answered.
	Status int
	// Location is a scripted HTTP redirect's target.
	Location string
}

// GRPCStatusName is the grpc.health.v1 name of a gRPC Answer's Status
// ("SERVING", "NOT_SERVING", ...), as a health client reports it.
func GRPCStatusName(status int) string {
	return healthpb.HealthCheckResponse_ServingStatus(status).String()
}

// HTTPBody is the body of an HTTP answer with that status.
func HTTPBody(status int) string { return fmt.Sprintf("%d\n", status) }

// AnswerTCP is how a TCP connect to ep is met at the clock's now.
func (r *Runtime) AnswerTCP(ep Endpoint) Answer {
	return r.answerAt(ep, nil)
}

// AnswerHTTP is what a GET of path (without its leading "/") on ep
// answers at the clock's now.
func (r *Runtime) AnswerHTTP(ep Endpoint, path string) Answer {
	return r.answerAt(ep, func(c *container, d time.Duration) answer { return c.script.httpAt(ep.Port, path, d) })
}

// AnswerGRPC is what a grpc.health.v1 check of service on ep answers at
// the clock's now.
func (r *Runtime) AnswerGRPC(ep Endpoint, service string) Answer {
	return r.answerAt(ep, func(c *container, d time.Duration) answer { return c.script.grpcAt(ep.Port, service, d) })
}

// answerAt connects to ep at now and, if the connection is accepted and
// request is not nil, asks the answering container the request.
func (r *Runtime) answerAt(ep Endpoint, request func(*container, time.Duration) answer) Answer {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	c, st, routed := r.connect(ep, now)
	switch {
	case !routed:
		return Answer{Outcome: NoRoute}
	case st == connRefused:
		return Answer{Outcome: Refused}
	case st == connUnanswered:
		return Answer{Outcome: Unanswered, ContainerID: c.id}
	case request == nil:
		return Answer{Outcome: Answered, ContainerID: c.id}
	}
	a := request(c, c.since(now))
	switch a.kind {
	case answerDown:
		return Answer{Outcome: Reset, ContainerID: c.id}
	case answerHang:
		return Answer{Outcome: Unanswered, ContainerID: c.id}
	}
	return Answer{Outcome: Answered, ContainerID: c.id, Status: a.value, Location: a.location}
}

// connect resolves ep at now (state advanced to it): the container answering, how
// the connection is met, and whether any ready sandbox is there at all.
func (r *Runtime) connect(ep Endpoint, now int64) (*container, connState, bool) {
	routed := false
	for _, sb := range r.sandboxesAt(ep) {
		if sb.state != readyState {
			continue
		}
		routed = true
		if c := sb.answering(ep.Port); c != nil {
			return c, c.script.connectAt(ep.Port, c.since(now)), true
		}
	}
	return nil, connRefused, routed
}

// sandboxesAt are the live sandboxes ep can reach, in creation order.
func (r *Runtime) sandboxesAt(ep Endpoint) []*sandbox {
	if ep.Sandbox != "" {
		if sb, ok := r.sandboxes[ep.Sandbox]; ok {
			return []*sandbox{sb}
		}
		return nil
	}
	return r.byAddr[ep.Addr]
}

// Listener is a port an address listens on.
type Listener struct {
	Port int
	// Unanswered: connects are never answered (a FAKECRI_TCP hang); else
	// they are accepted.
	Unanswered bool
	// ContainerID is the container listening.
	ContainerID string
}

// ListeningAt lists the ports addr listens on at the clock's now, in
// increasing order, and how long from now that may next change (a script
// step, a scheduled exit; 0: nothing is scheduled). A CRI call can change
// it sooner: WatchAddresses tells when.
func (r *Runtime) ListeningAt(addr string) ([]Listener, time.Duration) {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	var ports []int
	next := int64(0)
	soonest := func(t int64) {
		if t > now && (next == 0 || t < next) {
			next = t
		}
	}
	for _, sb := range r.byAddr[addr] {
		if sb.state != readyState {
			continue
		}
		ports = append(ports, sb.ports...)
		for _, c := range sb.containers {
			if c.state != runningState {
				continue
			}
			ports = c.script.namedPorts(ports)
			if d, ok := c.script.nextEndpointChange(c.since(now)); ok {
				soonest(addSat(c.startedAt, durNS(d)))
			}
			if c.exitIdx >= 0 {
				soonest(c.exitAt)
			}
		}
	}
	slices.Sort(ports)
	var out []Listener
	for _, port := range slices.Compact(ports) {
		c, st, _ := r.connect(Endpoint{Addr: addr, Port: port}, now)
		if st != connRefused {
			out = append(out, Listener{Port: port, Unanswered: st == connUnanswered, ContainerID: c.id})
		}
	}
	if next == 0 {
		return out, 0
	}
	return out, time.Duration(next - now)
}

// WatchAddresses makes the runtime call f with an address (a sandbox's IP,
// or Config.NodeAddress for host-network sandboxes) whenever what it
// listens on may have changed at once: a container started, exited or had
// its exit rescheduled, or a sandbox was removed. Changes that come with
// time alone (script steps, scheduled exits) are ListeningAt's next
// change. f is called with the runtime's lock held: it must not block or
// call back into the Runtime. There is one watcher; nil removes it.
func (r *Runtime) WatchAddresses(f func(addr string)) {
	r.mu.Lock()
	defer r.unlock()
	r.watch = f
}

// Addresses lists the addresses of the live sandboxes, in the order they
// were first used (for a watcher that starts late).
func (r *Runtime) Addresses() []string {
	r.mu.Lock()
	defer r.unlock()
	var out []string
	for _, sb := range r.sandboxOrder {
		if !sb.removed && sb.addr != "" && !slices.Contains(out, sb.addr) {
			out = append(out, sb.addr)
		}
	}
	return out
}

// touched tells the watcher that sb's address may listen differently.
func (r *Runtime) touched(sb *sandbox) {
	if r.watch != nil && sb.addr != "" {
		r.watch(sb.addr)
	}
}

// indexAddr adds sb to the sandboxes at its address.
func (r *Runtime) indexAddr(sb *sandbox) {
	if sb.addr != "" {
		r.byAddr[sb.addr] = append(r.byAddr[sb.addr], sb)
	}
}

// unindexAddr takes sb out of the sandboxes at its address and gives its
// loopback IP back.
func (r *Runtime) unindexAddr(sb *sandbox) {
	if sb.addr == "" {
		return
	}
	rest := slices.DeleteFunc(r.byAddr[sb.addr], func(o *sandbox) bool { return o == sb })
	if len(rest) == 0 {
		delete(r.byAddr, sb.addr)
	} else {
		r.byAddr[sb.addr] = rest
	}
	if r.loopback != nil && sb.ip != "" {
		r.loopback.release(sb.ip)
	}
}
