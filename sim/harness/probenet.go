package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// probeNet is the simulated probe network: a probe to a pod IP and port
// gets what fakecri says that endpoint answers at the current virtual
// time (fakecri.Runtime's AnswerHTTP, AnswerTCP and AnswerGRPC, the rule
// a served pod network follows too). An unanswered connection or request
// waits until the probe's context ends; an address no sandbox has is
// unreachable.
type probeNet struct {
	rt    *fakecri.Runtime
	tasks deps.Tasks
}

var _ deps.ProbeNetwork = probeNet{}

// Errors of probes that got no answer, worded like the real dialer's.
var (
	errNoRoute = errors.New("connect: no route to host")
	errRefused = errors.New("connect: connection refused")
	errReset   = errors.New("read: connection reset by peer")
	// errClientTimeout is net/http's error for a request that ran out of
	// http.Client.Timeout before the response headers came.
	errClientTimeout = errors.New("context deadline exceeded (Client.Timeout exceeded while awaiting headers)")
)

// fail turns an answer that is not one into the dialer's error: an
// unanswered one waits out ctx.
func (n probeNet) fail(ctx context.Context, ep fakecri.Endpoint, a fakecri.Answer) error {
	addr := net.JoinHostPort(ep.Addr, strconv.Itoa(ep.Port))
	switch a.Outcome {
	case fakecri.NoRoute:
		return fmt.Errorf("dial tcp %s: %w", addr, errNoRoute)
	case fakecri.Refused:
		return fmt.Errorf("dial tcp %s: %w", addr, errRefused)
	case fakecri.Reset:
		return fmt.Errorf("tcp %s: %w", addr, errReset)
	}
	_ = n.tasks.Sleep(ctx, 24*time.Hour)
	return fmt.Errorf("tcp %s: i/o timeout: %w", addr, ctx.Err())
}

// HTTPGet answers one GET from the container's FAKECRI_HTTP script.
func (n probeNet) HTTPGet(ctx context.Context, req deps.HTTPRequest) (deps.HTTPResponse, error) {
	u, err := url.Parse(req.URL)
	if err != nil {
		return deps.HTTPResponse{}, err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return deps.HTTPResponse{}, fmt.Errorf("url %q: bad port", req.URL)
	}
	ep := fakecri.Endpoint{Addr: u.Hostname(), Port: port}
	a := n.rt.AnswerHTTP(ep, strings.TrimPrefix(u.Path, "/"))
	if a.Outcome != fakecri.Answered {
		// Worded as net/http's client: the URL around the dialer's error,
		// and a request that outlives the probe's client timeout.
		err := n.fail(ctx, ep, a)
		if a.Outcome == fakecri.Unanswered && req.Timeout > 0 {
			err = errClientTimeout
		}
		return deps.HTTPResponse{}, &url.Error{Op: "Get", URL: req.URL, Err: err}
	}
	return deps.HTTPResponse{StatusCode: a.Status, Location: a.Location, Body: []byte(fakecri.HTTPBody(a.Status))}, nil
}

// DialTCP connects from the container's FAKECRI_TCP script.
func (n probeNet) DialTCP(ctx context.Context, host string, port int) error {
	ep := fakecri.Endpoint{Addr: host, Port: port}
	if a := n.rt.AnswerTCP(ep); a.Outcome != fakecri.Answered {
		return n.fail(ctx, ep, a)
	}
	return nil
}

// GRPCHealth answers from the container's FAKECRI_GRPC script, with the
// grpc.health.v1 status name the real client reports; an endpoint that
// does not answer fails once ctx ends.
func (n probeNet) GRPCHealth(ctx context.Context, host string, port int, service string) (string, error) {
	ep := fakecri.Endpoint{Addr: host, Port: port}
	a := n.rt.AnswerGRPC(ep, service)
	if a.Outcome != fakecri.Answered {
		// The real probe's dial blocks, retrying a refused or unreachable
		// address, until the probe's timeout (node/real/probenet).
		_ = n.tasks.Sleep(ctx, 24*time.Hour)
		return "", fmt.Errorf("connect gRPC probe of %s: %w", net.JoinHostPort(host, strconv.Itoa(port)), ctx.Err())
	}
	return fakecri.GRPCStatusName(a.Status), nil
}
