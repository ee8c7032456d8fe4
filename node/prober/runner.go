package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// MaxOutput caps the probe output kept for events, as upstream: 10 KiB.
const MaxOutput = 10 << 10

// MaxRedirects is how many redirects an HTTP probe follows.
const MaxRedirects = 10

// UserAgent is the User-Agent of HTTP probes, as the kubelet's.
const UserAgent = "kube-probe/1.37"

// Outcome is what one probe run found.
type Outcome struct {
	Result Result
	// Output is the probe's output or why it failed (capped at MaxOutput).
	Output string
	// Warning: a success worth a Warning event (a redirect to another
	// host, not followed).
	Warning bool
	// Err is why a failed run failed, when it has an error of its own:
	// an exec's exit error, an HTTP GET that got no response.
	Err error
	// Responded: an HTTP GET got a response, whatever its status code
	// (lifecycle hooks fail only when there is none).
	Responded bool
}

// Execer runs a command in a container (CRI ExecSync).
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error)
}

// Target is what a probe runs against.
type Target struct {
	Pod         *corev1.Pod
	Container   *corev1.Container
	ContainerID string
	// PodIP is the default host of HTTP, TCP and gRPC probes.
	PodIP string
}

// Runner carries out one probe through CRI exec or the probe network.
// Its Exec and HTTPGet are also the lifecycle hooks' (node/lifecycle).
type Runner struct {
	Execer Execer
	Net    deps.ProbeNetwork
	Clock  deps.Clock
}

// Run runs probe p against t within the probe's timeout. An error means
// the probe could not run at all (its outcome is Unknown).
func (r *Runner) Run(ctx context.Context, p *corev1.Probe, timeout time.Duration, t Target) (Outcome, error) {
	ctx, cancel := r.Clock.WithTimeout(ctx, timeout)
	defer cancel()
	h := p.ProbeHandler
	switch {
	case h.Exec != nil:
		return r.Exec(ctx, h.Exec.Command, timeout, t)
	case r.Net == nil:
		return Outcome{}, errors.New("no probe network")
	case h.HTTPGet != nil:
		return r.httpGet(ctx, h.HTTPGet, t, UserAgent, timeout)
	case h.TCPSocket != nil:
		return r.tcp(ctx, h.TCPSocket, t)
	case h.GRPC != nil:
		return r.grpc(ctx, h.GRPC, t, timeout)
	}
	return Outcome{}, errors.New("probe has no handler")
}

// Exec runs cmd in t's container through CRI ExecSync (timeout 0: none
// but ctx's). A non-zero exit or a timeout is a Failure; an error means
// the command could not run.
func (r *Runner) Exec(ctx context.Context, cmd []string, timeout time.Duration, t Target) (Outcome, error) {
	stdout, stderr, err := r.Execer.ExecSync(ctx, t.ContainerID, cmd, timeout)
	out := capOutput(string(stdout) + string(stderr))
	var exit interface{ ExitStatus() int }
	switch {
	case err == nil:
		return Outcome{Result: Success, Output: out}, nil
	case errors.As(err, &exit):
		return Outcome{Result: Failure, Output: out, Err: err}, nil
	case isTimeout(err):
		// The CRI client's words (cri-client ErrCommandTimedOut and the
		// command it wraps), which the kubelet's exec prober passes on.
		return Outcome{Result: Failure, Output: fmt.Sprintf("command timed out: %q timed out after %s", strings.Join(cmd, " "), timeout), Err: err}, nil
	}
	return Outcome{}, fmt.Errorf("exec probe in container %s: %w", t.ContainerID, err)
}

// isTimeout recognises a timed-out exec, whichever way the runtime says it.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "deadline exceeded") || strings.Contains(msg, "timeout")
}

func capOutput(s string) string {
	if len(s) > MaxOutput {
		return s[:MaxOutput]
	}
	return s
}

// port resolves a probe's port: a number, or the name of a container port.
func port(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port %d", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil && n > 0 && n <= 65535 {
		return n, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("no container port named %q in container %q", p.StrVal, c.Name)
}

// errNoIP: the pod has no IP (yet) to probe; the probe does not run (it
// must not dial the node's own address instead).
var errNoIP = errors.New("the pod has no IP yet")

func hostOr(host, podIP string) string {
	if host != "" {
		return host
	}
	return podIP
}

// HTTPGet sends the GET h describes to t (the pod IP unless h names a
// host), with User-Agent userAgent, following redirects as the kubelet
// does. A status outside 200–399 or no response is a Failure; an error
// means the request could not be built.
func (r *Runner) HTTPGet(ctx context.Context, h *corev1.HTTPGetAction, t Target, userAgent string) (Outcome, error) {
	return r.httpGet(ctx, h, t, userAgent, 0)
}

// httpGet is HTTPGet with the request's client timeout (0: ctx alone), as
// a probe's HTTP client has one.
func (r *Runner) httpGet(ctx context.Context, h *corev1.HTTPGetAction, t Target, userAgent string, timeout time.Duration) (Outcome, error) {
	if r.Net == nil {
		return Outcome{}, errors.New("no probe network")
	}
	n, err := port(h.Port, t.Container)
	if err != nil {
		return Outcome{}, err
	}
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := h.Path
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	host := hostOr(h.Host, t.PodIP)
	if host == "" {
		return Outcome{}, errNoIP
	}
	u, err := url.Parse(fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(n)), path))
	if err != nil {
		return Outcome{}, fmt.Errorf("HTTP probe URL of container %q: %w", t.Container.Name, err)
	}
	req := deps.HTTPRequest{Header: map[string][]string{"User-Agent": {userAgent}, "Accept": {"*/*"}}, Timeout: timeout}
	for _, hd := range h.HTTPHeaders {
		name := textproto.CanonicalMIMEHeaderKey(hd.Name)
		if name == "Host" {
			req.Host = hd.Value
			continue
		}
		if _, set := req.Header[name]; set && (name == "User-Agent" || name == "Accept") {
			delete(req.Header, name)
		}
		req.Header[name] = append(req.Header[name], hd.Value)
	}
	return followRedirects(ctx, r.Net, req, u), nil
}

// followRedirects sends GETs from u on, following redirects as the
// kubelet does: only to the same host name, at most MaxRedirects; a
// redirect elsewhere ends the probe with a success and a warning.
func followRedirects(ctx context.Context, pn deps.ProbeNetwork, req deps.HTTPRequest, u *url.URL) Outcome {
	first := u.Hostname()
	for hops := 0; ; hops++ {
		req.URL = u.String()
		resp, err := pn.HTTPGet(ctx, req)
		if err != nil {
			return Outcome{Result: Failure, Output: err.Error(), Err: err}
		}
		body := capOutput(string(resp.Body))
		code := resp.StatusCode
		if code < 300 || code >= 400 || resp.Location == "" {
			if code >= 200 && code < 400 {
				return Outcome{Result: Success, Output: body, Warning: code >= 300, Responded: true}
			}
			return Outcome{Result: Failure, Output: fmt.Sprintf("HTTP probe failed with statuscode: %d", code), Responded: true}
		}
		next, err := u.Parse(resp.Location)
		if err != nil {
			err = fmt.Errorf("bad redirect location %q: %w", resp.Location, err)
			return Outcome{Result: Failure, Output: err.Error(), Err: err}
		}
		if next.Hostname() != first {
			return Outcome{Result: Success, Warning: true, Responded: true,
				Output: fmt.Sprintf("Probe terminated redirects, Response body: %s", body)}
		}
		if hops+1 >= MaxRedirects {
			err := fmt.Errorf("Get %q: stopped after %d redirects", next, MaxRedirects)
			return Outcome{Result: Failure, Output: err.Error(), Err: err}
		}
		if req.Host != "" && next.Host != u.Host {
			req.Host = ""
		}
		u = next
	}
}

func (r *Runner) tcp(ctx context.Context, h *corev1.TCPSocketAction, t Target) (Outcome, error) {
	n, err := port(h.Port, t.Container)
	if err != nil {
		return Outcome{}, err
	}
	host := hostOr(h.Host, t.PodIP)
	if host == "" {
		return Outcome{}, errNoIP
	}
	if err := r.Net.DialTCP(ctx, host, n); err != nil {
		return Outcome{Result: Failure, Output: err.Error()}, nil
	}
	return Outcome{Result: Success}, nil
}

func (r *Runner) grpc(ctx context.Context, h *corev1.GRPCAction, t Target, timeout time.Duration) (Outcome, error) {
	service := ""
	if h.Service != nil {
		service = *h.Service
	}
	if t.PodIP == "" {
		return Outcome{}, errNoIP
	}
	st, err := r.Net.GRPCHealth(ctx, t.PodIP, int(h.Port), service)
	if err != nil {
		return Outcome{Result: Failure, Output: grpcFailure(err, net.JoinHostPort(t.PodIP, strconv.Itoa(int(h.Port))), timeout)}, nil
	}
	if st != "SERVING" {
		return Outcome{Result: Failure, Output: fmt.Sprintf("service unhealthy (responded with %q)", st)}, nil
	}
	return Outcome{Result: Success, Output: "service healthy"}, nil
}

// grpcFailure words a failed gRPC health check as pkg/probe/grpc does: a
// connection not made within the timeout (the kubelet dials blocking, so
// a refused port ends there too), a check that did not finish, a server
// without the health service, anything else.
func grpcFailure(err error, addr string, timeout time.Duration) string {
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unimplemented:
			return "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " + st.Message()
		case codes.DeadlineExceeded:
			return fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
		}
		return fmt.Sprintf("error: health rpc probe failed: %v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("timeout: failed to connect service %q within %v: %v", addr, timeout, context.DeadlineExceeded)
	}
	return fmt.Sprintf("error: failed to connect service at %q: %v", addr, err)
}
