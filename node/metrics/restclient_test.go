package metrics

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRESTClientHooks(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := NewRESTClient(reg)
	hooks := r.Hooks()
	ctx := context.Background()
	u := url.URL{Scheme: "https", Host: "10.0.0.1:6443", Path: "/api/v1/pods"}
	hooks.RequestResult.Increment(ctx, "200", "PATCH", u.Host)
	hooks.RequestResult.Increment(ctx, "200", "PATCH", u.Host)
	hooks.RequestLatency.Observe(ctx, "PATCH", u, 30*time.Millisecond)
	hooks.RateLimiterLatency.Observe(ctx, "PATCH", u, time.Millisecond)
	want := `
# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="10.0.0.1:6443",method="PATCH"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "rest_client_requests_total"); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"rest_client_request_duration_seconds", "rest_client_rate_limiter_duration_seconds"} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != 1 {
			t.Errorf("%s: %d series, err %v; want 1", name, n, err)
		}
	}
}
