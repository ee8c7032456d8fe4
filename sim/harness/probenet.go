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
// reaches the fake container listening there (fakecri.ContainerAt), which
// answers from its script at the current virtual time. A "hang" answer
// waits until the probe's context ends; any other host is unreachable.
type probeNet struct {
	rt    *fakecri.Runtime
	tasks deps.Tasks
}

var _ deps.ProbeNetwork = probeNet{}

// errNoRoute is the error of a probe to an address no container has.
var errNoRoute = errors.New("no route to host")

func (n probeNet) target(host string, port int) (string, error) {
	id, ok := n.rt.ContainerAt(host, port)
	if !ok {
		return "", fmt.Errorf("dial tcp %s: %w", net.JoinHostPort(host, strconv.Itoa(port)), errNoRoute)
	}
	return id, nil
}

// fail turns a fakecri probe error into the dialer's: a hang waits out
// ctx.
func (n probeNet) fail(ctx context.Context, err error) error {
	var pe *fakecri.ProbeError
	if errors.As(err, &pe) && pe.Failure == fakecri.ProbeTimeout {
		_ = n.tasks.Sleep(ctx, 24*time.Hour)
		return fmt.Errorf("%v: %w", err, ctx.Err())
	}
	return err
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
	id, err := n.target(u.Hostname(), port)
	if err != nil {
		return deps.HTTPResponse{}, err
	}
	code, loc, err := n.rt.ProbeHTTPRedirect(id, port, strings.TrimPrefix(u.Path, "/"))
	if err != nil {
		return deps.HTTPResponse{}, n.fail(ctx, err)
	}
	return deps.HTTPResponse{StatusCode: code, Location: loc, Body: []byte(strconv.Itoa(code) + "\n")}, nil
}

// DialTCP connects from the container's FAKECRI_TCP script.
func (n probeNet) DialTCP(ctx context.Context, host string, port int) error {
	id, err := n.target(host, port)
	if err != nil {
		return err
	}
	if err := n.rt.ProbeTCP(id, port); err != nil {
		return n.fail(ctx, err)
	}
	return nil
}

// GRPCHealth answers from the container's FAKECRI_GRPC script.
func (n probeNet) GRPCHealth(ctx context.Context, host string, port int, service string) (string, error) {
	id, err := n.target(host, port)
	if err != nil {
		return "", err
	}
	serving, err := n.rt.ProbeGRPC(id, port, service)
	if err != nil {
		return "", n.fail(ctx, err)
	}
	if serving {
		return "SERVING", nil
	}
	return "NOT_SERVING", nil
}
