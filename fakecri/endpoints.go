package fakecri

import (
	"slices"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// This file owns one decision: what a container's network endpoints
// answer at a moment of its life. The simulator's probe network, a pod
// network served on real sockets (fakecri/podnet), the port-forward stream
// and the checkers' Endpoints all ask it, so they cannot drift apart.
//
// The rule:
//   - A running container listens on the ports its FAKECRI_HTTP, FAKECRI_TCP
//     and FAKECRI_GRPC rules name by number, and on the TCP container ports
//     its pod declares (the sandbox's port mappings). Other ports refuse
//     connections: a "*" rule covers the ports a container listens on, it
//     opens none.
//   - The container answering a pod address's port is the first running
//     container of the sandbox (creation order) whose rules name the port;
//     for a declared port no rule names, the sandbox's first running
//     container.
//   - A connection to a listened port is met by FAKECRI_TCP's rule for the
//     port (port, else "*"): up accepts, down refuses, hang never answers
//     the connect. Without one it is accepted, unless every FAKECRI_HTTP and
//     FAKECRI_GRPC rule covering the port (its own or "*"'s, any path or
//     service) answers down, which refuses it.
//   - On an accepted connection a request gets the most specific rule's
//     answer (port+path, port, "*"+path, "*"); unscripted requests answer
//     HTTP 200 and gRPC SERVING. A request answered down has its connection
//     closed unanswered (a reset), one answered hang waits for the caller to
//     give up.

// connState is how a connection to a port is met.
type connState uint8

const (
	connRefused    connState = iota // nothing listens
	connUnanswered                  // the connect is never answered
	connAccepted                    // a listener accepts it
)

// namesPort reports whether one of the script's endpoint rules names port
// by number.
func (s *script) namesPort(port int) bool {
	for _, rules := range [...][]rule{s.http, s.tcp, s.grpc} {
		for _, rl := range rules {
			if rl.port == port {
				return true
			}
		}
	}
	return false
}

// namedPorts appends the ports the script's endpoint rules name.
func (s *script) namedPorts(ports []int) []int {
	for _, rules := range [...][]rule{s.http, s.tcp, s.grpc} {
		for _, rl := range rules {
			if rl.port != 0 {
				ports = append(ports, rl.port)
			}
		}
	}
	return ports
}

// connectAt is how a connection to port, one the container listens on, is
// met at d since the container started.
func (s *script) connectAt(port int, d time.Duration) connState {
	if rl, ok := findRule(s.tcp, port, ""); ok {
		switch rl.tl.at(d).kind {
		case answerDown:
			return connRefused
		case answerHang:
			return connUnanswered
		}
		return connAccepted
	}
	covered := false
	for _, rules := range [...][]rule{s.http, s.grpc} {
		for _, rl := range rules {
			if rl.port != port && rl.port != 0 {
				continue
			}
			if rl.tl.at(d).kind != answerDown {
				return connAccepted
			}
			covered = true
		}
	}
	if covered {
		return connRefused
	}
	return connAccepted
}

// httpAt is the answer to a GET of path (without its leading "/") on an
// accepted connection to port at d: unscripted paths answer 200.
func (s *script) httpAt(port int, path string, d time.Duration) answer {
	if rl, ok := findRule(s.http, port, path); ok {
		return rl.tl.at(d)
	}
	return answer{value: 200}
}

// grpcAt is the answer to a health check of service on an accepted
// connection to port at d: unscripted services are SERVING.
func (s *script) grpcAt(port int, service string, d time.Duration) answer {
	if rl, ok := findRule(s.grpc, port, service); ok {
		return rl.tl.at(d)
	}
	return answer{value: grpcServing}
}

// nextEndpointChange is the first time after d at which one of the
// script's endpoint rules changes its answer, and false if none does.
func (s *script) nextEndpointChange(d time.Duration) (time.Duration, bool) {
	var next time.Duration
	found := false
	for _, rules := range [...][]rule{s.http, s.tcp, s.grpc} {
		for _, rl := range rules {
			for _, st := range rl.tl {
				if st.at > d && (!found || st.at < next) {
					next, found = st.at, true
					break
				}
			}
		}
	}
	return next, found
}

// declaredPorts are the TCP container ports of a sandbox's port mappings,
// sorted, without duplicates.
func declaredPorts(sb *sandbox) []int {
	var ports []int
	for _, pm := range sb.config.GetPortMappings() {
		if pm.GetProtocol() == runtimeapi.Protocol_TCP && pm.GetContainerPort() > 0 {
			ports = append(ports, int(pm.GetContainerPort()))
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

// declares reports whether the sandbox's pod declares TCP port.
func (sb *sandbox) declares(port int) bool {
	_, ok := slices.BinarySearch(sb.ports, port)
	return ok
}

// answering returns the running container of sb that answers on port, nil
// when nothing listens there.
func (sb *sandbox) answering(port int) *container {
	var first *container
	for _, c := range sb.containers {
		if c.state != runningState {
			continue
		}
		if c.script.namesPort(port) {
			return c
		}
		if first == nil {
			first = c
		}
	}
	if first != nil && sb.declares(port) {
		return first
	}
	return nil
}

// since is the time from c's start to now.
func (c *container) since(now int64) time.Duration { return time.Duration(now - c.startedAt) }
