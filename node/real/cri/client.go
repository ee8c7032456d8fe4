// Package cri is the production CRI adapter: a CRI v1 gRPC client over a
// unix socket (containerd, CRI-O, or lockstep's fakecri server) that
// implements the RuntimeService and ImageManagerService ports of
// k8s.io/cri-api, plus the container event source of the PLEG's evented
// mode.
//
// Every call is bounded by Options.RequestTimeout unless its context ends
// sooner; PullImage is bounded only by its context, ExecSync by its own
// timeout plus the request timeout. Errors keep their gRPC status (callers
// test status.Code(err)) and name the method and the object. The gRPC
// connection reconnects by itself, so a runtime that restarts (its socket
// re-created) is usable again without restarting the agent.
//
// It lives under node/real, outside the determinism lint: it uses
// goroutines, channels and the wall clock. Only cmd/ wires it in.
package cri

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Defaults of Options.
const (
	// DefaultRequestTimeout bounds each call, like the kubelet's
	// --runtime-request-timeout.
	DefaultRequestTimeout = 2 * time.Minute
	// DefaultConnectTimeout bounds the checks Dial makes.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultEventHandshake is how long Subscribe waits for the runtime to
	// confirm an event subscription.
	DefaultEventHandshake = time.Second
	// MaxMsgSize is the largest message sent or received, the kubelet's
	// and containerd's limit.
	MaxMsgSize = 16 << 20
)

// Options tunes a Client. Zero values take the defaults.
type Options struct {
	// RequestTimeout bounds every call whose context has no earlier
	// deadline (default 2 min; negative: no bound).
	RequestTimeout time.Duration
	// ConnectTimeout bounds Dial's reachability checks (default 10 s). An
	// absent socket or a refused connection fails at once regardless.
	ConnectTimeout time.Duration
	// ImageEndpoint is the image service's socket when it is not the
	// runtime's (--image-service-endpoint); empty means the runtime's.
	ImageEndpoint string
	// EventHandshake is how long Subscribe waits for the runtime's
	// response headers, which confirm the subscription (default 1 s).
	// Runtimes that send them only with the first event (containerd) are
	// assumed subscribed once it has passed.
	EventHandshake time.Duration
}

func (o Options) withDefaults() Options {
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.EventHandshake <= 0 {
		o.EventHandshake = DefaultEventHandshake
	}
	return o
}

// Client is a CRI v1 runtime and image service client. It is safe for
// concurrent use.
type Client struct {
	opts          Options
	endpoint      string
	imageEndpoint string

	conn      *grpc.ClientConn
	imageConn *grpc.ClientConn // == conn when the services share a socket
	runtime   runtimeapi.RuntimeServiceClient
	images    runtimeapi.ImageServiceClient

	version *runtimeapi.VersionResponse
}

var (
	_ cri.RuntimeService      = (*Client)(nil)
	_ cri.ImageManagerService = (*Client)(nil)
)

// Dial connects to the runtime at endpoint ("unix:///run/containerd/
// containerd.sock" or a bare absolute path) and checks, with one Version
// call, that it answers and speaks CRI v1. With Options.ImageEndpoint set,
// it also connects to that image service and checks it answers. The
// connections stay open until Close and reconnect by themselves.
func Dial(ctx context.Context, endpoint string, opts Options) (*Client, error) {
	opts = opts.withDefaults()
	c := &Client{opts: opts, endpoint: endpoint, imageEndpoint: endpoint}
	conn, err := connect("container runtime", endpoint)
	if err != nil {
		return nil, err
	}
	c.conn, c.imageConn = conn, conn
	c.runtime = runtimeapi.NewRuntimeServiceClient(conn)
	if opts.ImageEndpoint != "" && opts.ImageEndpoint != endpoint {
		c.imageEndpoint = opts.ImageEndpoint
		if c.imageConn, err = connect("image service", opts.ImageEndpoint); err != nil {
			conn.Close()
			return nil, err
		}
	}
	c.images = runtimeapi.NewImageServiceClient(c.imageConn)
	if err := c.check(ctx); err != nil {
		c.Close(ctx)
		return nil, err
	}
	return c, nil
}

// check is Dial's Version (and image service) check.
func (c *Client) check(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()
	v, err := c.runtime.Version(cctx, &runtimeapi.VersionRequest{Version: "v1"})
	switch {
	case status.Code(err) == codes.Unimplemented:
		return fmt.Errorf("container runtime at %s does not speak CRI v1: %w", c.endpoint, err)
	case err != nil:
		return fmt.Errorf("container runtime at %s is not reachable: %w", c.endpoint, err)
	case v.GetRuntimeApiVersion() != "v1":
		return fmt.Errorf("container runtime at %s does not speak CRI v1: it answers API version %q (%s %s)",
			c.endpoint, v.GetRuntimeApiVersion(), v.GetRuntimeName(), v.GetRuntimeVersion())
	}
	c.version = v
	if c.imageConn == c.conn {
		return nil
	}
	_, err = c.images.ImageFsInfo(cctx, &runtimeapi.ImageFsInfoRequest{})
	switch {
	case status.Code(err) == codes.Unimplemented:
		return fmt.Errorf("image service at %s does not speak CRI v1: %w", c.imageEndpoint, err)
	case err != nil:
		return fmt.Errorf("image service at %s is not reachable: %w", c.imageEndpoint, err)
	}
	return nil
}

// connect makes a lazily connecting gRPC client for a unix socket
// endpoint, with the kubelet's message limits and a reconnection backoff
// short enough (at most 3 s) that a restarted runtime is found quickly.
// what names the service in errors.
func connect(what, endpoint string) (*grpc.ClientConn, error) {
	path, err := SocketPath(endpoint)
	if err != nil {
		return nil, fmt.Errorf("%s %w", what, err)
	}
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(MaxMsgSize),
			grpc.MaxCallSendMsgSize(MaxMsgSize),
		),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  100 * time.Millisecond,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   3 * time.Second,
			},
			MinConnectTimeout: 20 * time.Second,
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("%s endpoint %q: %w", what, endpoint, err)
	}
	return conn, nil
}

// SocketPath returns the socket file of a "unix:///path" endpoint or a
// bare absolute path. Other schemes (tcp, npipe) are refused.
func SocketPath(endpoint string) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("endpoint %q: %s; want unix:///path/to/socket", endpoint, why)
	}
	path := endpoint
	switch {
	case endpoint == "":
		return "", bad("empty")
	case strings.HasPrefix(endpoint, "unix://"):
		path = strings.TrimPrefix(endpoint, "unix://")
	case strings.Contains(endpoint, "://"):
		return "", bad("unsupported scheme")
	}
	if !filepath.IsAbs(path) {
		return "", bad("socket path is not absolute")
	}
	return filepath.Clean(path), nil
}

// Endpoint is the runtime endpoint the client was dialled with.
func (c *Client) Endpoint() string { return c.endpoint }

// ImageEndpoint is the image service endpoint (the runtime's unless
// Options.ImageEndpoint named another).
func (c *Client) ImageEndpoint() string { return c.imageEndpoint }

// DialVersion is the runtime's answer to Dial's Version call (name,
// version, API version), for the node's nodeInfo.
func (c *Client) DialVersion() *runtimeapi.VersionResponse { return c.version }

// Close closes the connections. Calls in flight fail with Canceled.
func (c *Client) Close(context.Context) error {
	err := c.conn.Close()
	if c.imageConn != c.conn {
		err = errors.Join(err, c.imageConn.Close())
	}
	return err
}

// call bounds ctx by the request timeout.
func (c *Client) call(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.opts.RequestTimeout < 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.opts.RequestTimeout)
}

// wrap names the method (and the object, when there is one) in err while
// keeping its gRPC status for status.Code.
// An empty object is left out.
func wrap(err error, method, object string) error {
	if object != "" {
		return fmt.Errorf("CRI %s %q: %w", method, object, err)
	}
	return fmt.Errorf("CRI %s: %w", method, err)
}
