package kube

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// LoadKubeconfig reads the kubeconfig file at path (its current context)
// into a rest.Config. Unlike clientcmd's defaults, an empty path is an
// error rather than a fallback to in-cluster or ~/.kube/config.
func LoadKubeconfig(path string) (*rest.Config, error) {
	if path == "" {
		return nil, errors.New("load kubeconfig: no path given")
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path},
		&clientcmd.ConfigOverrides{},
	)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %q: %w", path, err)
	}
	return cfg, nil
}

// NewForConfig builds the clients the way the kubelet does and returns a
// Client on them: a main client limited to qps/burst (zero means
// DefaultAPIQPS/DefaultAPIBurst) that speaks protobuf, and an unthrottled
// heartbeat client with opts.HeartbeatTimeout for the node status and
// lease (unless opts.Heartbeat is already set), and an event client of
// its own limited to opts.EventQPS/EventBurst (unless opts.Events is
// already set), as the kubelet's. cfg is not modified.
func NewForConfig(cfg *rest.Config, qps float32, burst int, opts Options) (*Client, error) {
	if qps == 0 {
		qps = DefaultAPIQPS
	}
	if burst <= 0 {
		burst = DefaultAPIBurst
	}
	mainCfg := configured(cfg)
	mainCfg.QPS, mainCfg.Burst = qps, burst
	cs, err := kubernetes.NewForConfig(mainCfg)
	if err != nil {
		return nil, fmt.Errorf("build apiserver client for %s: %w", cfg.Host, err)
	}
	if opts.Heartbeat == nil {
		hb := configured(cfg)
		hb.QPS = -1 // no client-side limit
		hb.Timeout = opts.HeartbeatTimeout
		if hb.Timeout <= 0 {
			hb.Timeout = DefaultHeartbeatTimeout
		}
		opts.Heartbeat, err = kubernetes.NewForConfig(hb)
		if err != nil {
			return nil, fmt.Errorf("build heartbeat client for %s: %w", cfg.Host, err)
		}
	}
	if opts.Events == nil {
		ev := configured(cfg)
		ev.QPS, ev.Burst = opts.EventQPS, opts.EventBurst
		switch {
		case ev.QPS < 0:
			ev.QPS = -1 // no client-side limit
		case ev.QPS == 0:
			ev.QPS = DefaultEventQPS
		}
		if ev.Burst <= 0 {
			ev.Burst = DefaultEventBurst
		}
		opts.Events, err = kubernetes.NewForConfig(ev)
		if err != nil {
			return nil, fmt.Errorf("build event client for %s: %w", cfg.Host, err)
		}
	}
	return New(cs, opts), nil
}

// configured copies cfg with protobuf encoding (JSON accepted too).
func configured(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return c
}
