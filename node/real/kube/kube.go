// Package kube is the production side of the agent's apiserver ports
// (deps.PodAPI, deps.NodeAPI, deps.LeaseAPI, deps.EventSink), built on
// client-go, and of the certificate ports the daemon uses to join a
// cluster (deps.CSRAPI, ECDSA keys, a client-go transport whose client
// certificate rotates, the kubeconfig a TLS bootstrap writes).
package kube

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Defaults, matching the kubelet's (kubeAPIQPS, kubeAPIBurst,
// eventRecordQPS, eventBurst).
const (
	DefaultComponent        = "kubelet"
	DefaultAPIQPS           = 50
	DefaultAPIBurst         = 100
	DefaultEventQPS         = 50
	DefaultEventBurst       = 100
	DefaultHeartbeatTimeout = 10 * time.Second
)

// Options configures a Client.
type Options struct {
	// NodeName is this node's name; it becomes the events' source host.
	NodeName string
	// Component is the events' source component; empty means
	// DefaultComponent, "kubelet", as the kubelet's: tools and the
	// conformance suite select a node agent's events with
	// source=kubelet.
	Component string
	// EventQPS and EventBurst limit how fast events are written to the
	// apiserver (after the spam filter). Zero means the default; a
	// negative EventQPS disables the limit.
	EventQPS   float32
	EventBurst int
	// Heartbeat, when set, is the client used for the node's status and
	// lease (GetNode, PatchNodeStatus, leases), so that heartbeats are not
	// queued behind pod writes in the main client's rate limiter, as the
	// kubelet does. Nil means the main client.
	Heartbeat kubernetes.Interface
	// HeartbeatTimeout is the request timeout NewForConfig gives the
	// heartbeat client; zero means DefaultHeartbeatTimeout. New ignores it.
	HeartbeatTimeout time.Duration
	// Events, when set, is the client events are written with, limited by
	// its own rate limiter (NewForConfig makes one of EventQPS/EventBurst,
	// as the kubelet's event client), so that events never take the main
	// client's tokens from status writes. Nil means the main client,
	// behind a limiter of EventQPS/EventBurst.
	Events kubernetes.Interface
}

// Client implements the agent's apiserver ports with client-go.
type Client struct {
	cs        kubernetes.Interface
	heartbeat kubernetes.Interface
	events    kubernetes.Interface // nil: events go through cs

	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	// stopEvents cancels rate-limiter waits of the event sink on Shutdown.
	stopEvents context.CancelFunc
}

// Compile-time checks that Client implements the ports.
var (
	_ deps.PodAPI    = (*Client)(nil)
	_ deps.NodeAPI   = (*Client)(nil)
	_ deps.LeaseAPI  = (*Client)(nil)
	_ deps.EventSink = (*Client)(nil)
)

// New returns a Client on cs and starts its event broadcaster, which
// writes events through cs until Shutdown.
func New(cs kubernetes.Interface, opts Options) *Client {
	if opts.Component == "" {
		opts.Component = DefaultComponent
	}
	c := &Client{cs: cs, heartbeat: opts.Heartbeat, events: opts.Events}
	if c.heartbeat == nil {
		c.heartbeat = cs
	}

	var sink record.EventSink = &typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")}
	if opts.Events != nil {
		sink = &typedcorev1.EventSinkImpl{Interface: opts.Events.CoreV1().Events("")}
	} else if opts.EventQPS >= 0 {
		qps, burst := opts.EventQPS, opts.EventBurst
		if qps == 0 {
			qps = DefaultEventQPS
		}
		if burst <= 0 {
			burst = DefaultEventBurst
		}
		ctx, cancel := context.WithCancel(context.Background())
		c.stopEvents = cancel
		sink = &limitedSink{ctx: ctx, limiter: flowcontrol.NewTokenBucketRateLimiter(qps, burst), sink: sink}
	}
	c.broadcaster = record.NewBroadcaster()
	c.broadcaster.StartRecordingToSink(sink)
	c.recorder = c.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: opts.Component, Host: opts.NodeName})
	return c
}

// API returns the ports as a deps.API.
func (c *Client) API() deps.API {
	return deps.API{Pods: c, Nodes: c, Leases: c, Events: c, ConfigMaps: c, Secrets: c, Services: c, RuntimeClasses: c, Tokens: c, ObjectWatches: c, Claims: c, TrustBundles: c, NodeWatch: c}
}

// Shutdown stops the event broadcaster; events still queued may be lost.
// The client must not record events afterwards.
func (c *Client) Shutdown() {
	if c.stopEvents != nil {
		c.stopEvents()
	}
	c.broadcaster.Shutdown()
}
