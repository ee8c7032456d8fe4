package metrics

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// restClientBuckets are client-go's request latency buckets (seconds), as
// the upstream registration uses them.
var restClientBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}

// RESTClient is client-go's request instrumentation under the names,
// labels and buckets the upstream components register it with:
// rest_client_requests_total{code,method,host},
// rest_client_request_duration_seconds{verb,host} and
// rest_client_rate_limiter_duration_seconds{verb,host}. client-go reports
// to it once Hooks are registered with
// k8s.io/client-go/tools/metrics.Register, which the process does once
// (client-go keeps the hooks in package variables).
type RESTClient struct {
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	rateLimiter *prometheus.HistogramVec
}

// NewRESTClient returns the REST client metrics, registered on reg.
func NewRESTClient(reg prometheus.Registerer) *RESTClient {
	r := &RESTClient{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rest_client_requests_total",
			Help: "Number of HTTP requests, partitioned by status code, method, and host.",
		}, []string{"code", "method", "host"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rest_client_request_duration_seconds",
			Help:    "Request latency in seconds. Broken down by verb, and host.",
			Buckets: restClientBuckets,
		}, []string{"verb", "host"}),
		rateLimiter: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rest_client_rate_limiter_duration_seconds",
			Help:    "Client side rate limiter latency in seconds. Broken down by verb, and host.",
			Buckets: restClientBuckets,
		}, []string{"verb", "host"}),
	}
	reg.MustRegister(r.requests, r.latency, r.rateLimiter)
	return r
}

// Hooks returns client-go's registration options that report to r.
func (r *RESTClient) Hooks() clientmetrics.RegisterOpts {
	return clientmetrics.RegisterOpts{
		RequestResult:      resultHook{r.requests},
		RequestLatency:     latencyHook{r.latency},
		RateLimiterLatency: latencyHook{r.rateLimiter},
	}
}

// resultHook counts requests by result.
type resultHook struct{ c *prometheus.CounterVec }

func (h resultHook) Increment(_ context.Context, code, method, host string) {
	h.c.WithLabelValues(code, method, host).Inc()
}

// latencyHook observes a latency by verb and host.
type latencyHook struct{ h *prometheus.HistogramVec }

func (h latencyHook) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	h.h.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}
