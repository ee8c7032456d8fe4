// Package probenet is the real probe network: HTTP GETs with net/http,
// TCP connects with net.Dialer and gRPC health checks with the gRPC health
// client, all from the agent's own network namespace.
package probenet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// maxBody is how much of a response body is read (the prober keeps 10 KiB).
const maxBody = 10 << 10

// Net is the real deps.ProbeNetwork.
type Net struct {
	client *http.Client
}

var _ deps.ProbeNetwork = (*Net)(nil)

// New returns the real probe network. Like the kubelet's probes, HTTPS
// does not verify certificates, connections are not reused and no proxy
// is used.
func New() *Net {
	tr := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes do not verify, as upstream
		DisableKeepAlives:  true,
		DisableCompression: true,
		Proxy:              nil,
	}
	return &Net{client: &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// HTTPGet sends one GET and returns its status, Location and the start of
// its body; redirects are left to the caller. With r.Timeout the request
// runs under http.Client.Timeout, as the kubelet's probe client does, so
// a hanging target fails with the client's own error ("… (Client.Timeout
// exceeded while awaiting headers)"); ctx's deadline, the same timeout,
// then does not race it, only ctx's cancellation ends the request early.
func (n *Net) HTTPGet(ctx context.Context, r deps.HTTPRequest) (deps.HTTPResponse, error) {
	client := n.client
	if r.Timeout > 0 {
		c := *n.client
		c.Timeout = r.Timeout
		client = &c
		var stop func()
		ctx, stop = withoutDeadline(ctx)
		defer stop()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return deps.HTTPResponse{}, fmt.Errorf("probe request %s: %w", r.URL, err)
	}
	for k, vs := range r.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if r.Host != "" {
		req.Host = r.Host
	}
	resp, err := client.Do(req)
	if err != nil {
		return deps.HTTPResponse{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return deps.HTTPResponse{}, fmt.Errorf("read probe response of %s: %w", r.URL, err)
	}
	return deps.HTTPResponse{StatusCode: resp.StatusCode, Location: resp.Header.Get("Location"), Body: body}, nil
}

// withoutDeadline returns a context that ends when ctx is cancelled but
// not when its deadline passes, and a function releasing it.
func withoutDeadline(ctx context.Context) (context.Context, func()) {
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	return out, func() { unhook(); cancel() }
}

// DialTCP opens and closes a TCP connection.
func (n *Net) DialTCP(ctx context.Context, host string, port int) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return conn.Close()
}

// GRPCHealth calls grpc.health.v1.Health/Check without TLS. Like the
// kubelet's blocking dial, it waits for the connection until ctx ends (a
// refused port is retried until then) and then fails with ctx's error; the
// check's own error is the bare gRPC status, for the prober to word.
func (n *Net) GRPCHealth(ctx context.Context, host string, port int, service string) (string, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent("kube-probe/1.37"))
	if err != nil {
		return "", fmt.Errorf("gRPC probe of %s: %w", addr, err)
	}
	defer conn.Close()
	for state := conn.GetState(); state != connectivity.Ready; state = conn.GetState() {
		if state == connectivity.Idle {
			conn.Connect()
		}
		if !conn.WaitForStateChange(ctx, state) {
			return "", fmt.Errorf("connect gRPC probe of %s: %w", addr, ctx.Err())
		}
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return "", err
	}
	return resp.GetStatus().String(), nil
}
