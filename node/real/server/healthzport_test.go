package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
)

// TestHealthzPortServesHealthOnly: the healthz port answers /healthz and
// its checks like the other ports, and nothing else — no pods, stats,
// metrics, configuration, logs or profiles unauthenticated.
func TestHealthzPortServesHealthOnly(t *testing.T) {
	p := newProvider(t)
	p.setPods(logPod(0))
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "kubelet_running_pods 1\n") })
	s := newServer(t, p, AlwaysAllow{}, func(c *Config) {
		c.HealthzAddress, c.HealthzPort = "127.0.0.1", 10248
		c.Metrics, c.ProbeMetrics, c.Configz, c.SystemLogs, c.Profiling = metrics, metrics, map[string]int{"a": 1}, true, true
	})
	type answer struct {
		Code int
		Body string
	}
	got := map[string]answer{}
	paths := []string{"/healthz", "/healthz/ping", "/healthz/syncloop", "/healthz?verbose", "/pods", "/stats/summary",
		"/metrics", "/metrics/probes", "/metrics/resource", "/metrics/cadvisor", "/configz", "/logs/", "/debug/pprof/",
		"/containerLogs/default/web/app", "/run/default/web/app", "/exec/default/web/app"}
	for _, path := range paths {
		code, body := get(t, s.HealthzHandler(), path, "")
		got[path] = answer{code, body}
	}
	want := map[string]answer{
		"/healthz":          {200, "ok"},
		"/healthz/ping":     {200, "ok"},
		"/healthz/syncloop": {200, "ok"},
		"/healthz?verbose":  {200, "[+]ping ok\n[+]log ok\n[+]syncloop ok\nhealthz check passed\n"},
	}
	for _, path := range paths {
		if _, ok := want[path]; !ok {
			want[path] = answer{404, "404 page not found\n"}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("healthz port answers (-want +got):\n%s", diff)
	}
	p.setHealth(errors.New("PLEG last relisted 3m30s ago"))
	if code, body := get(t, s.HealthzHandler(), "/healthz", ""); code != 500 || body != "[+]ping ok\n[+]log ok\n[-]syncloop failed: PLEG last relisted 3m30s ago\nhealthz check failed\n" {
		t.Errorf("unhealthy: got %d %q", code, body)
	}
}

// TestHealthzPortListensAndRetries: Start listens on the healthz address
// and port; when that address is taken the node still starts, and the
// port is tried again until it listens.
func TestHealthzPortListensAndRetries(t *testing.T) {
	for _, taken := range []bool{false, true} {
		p := newProvider(t)
		s, err := New(p, Config{CertDir: t.TempDir(), HealthzAddress: "127.0.0.1", HealthzPort: 10248, Authorizer: AlwaysAllow{}},
			slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ll := &localListen{}
		if taken {
			ll.fail = "127.0.0.1:10248"
		}
		s.listen = ll.listen
		mock := clock.NewMock()
		s.clock = mock
		ctx, cancel := context.WithCancel(context.Background())
		if err := s.Start(ctx); err != nil {
			t.Fatalf("taken=%v: Start: %v", taken, err)
		}
		if taken {
			if s.HealthzAddr() != nil {
				t.Errorf("healthz address known while the port is taken")
			}
			ll.mu.Lock()
			ll.fail = ""
			ll.mu.Unlock()
		}
		// Retries come on the mock clock: a retry period at a time until
		// the port listens (a bounded number of them).
		for i := 0; i < 100 && !listening(s); i++ {
			mock.Add(s.healthzRetry)
		}
		addr := s.HealthzAddr()
		if addr == nil {
			t.Fatalf("taken=%v: the healthz port never listened", taken)
		}
		ll.mu.Lock()
		asked := slices.Clone(ll.asked)
		ll.mu.Unlock()
		if asked[0] != ":10250" || !slices.Contains(asked, "127.0.0.1:10248") || taken != (len(asked) > 2) {
			t.Errorf("taken=%v: listened on %v", taken, asked)
		}
		resp, err := http.Get("http://" + addr.String() + "/healthz")
		if err != nil {
			t.Fatalf("GET /healthz: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "ok" {
			t.Errorf("taken=%v: GET /healthz: %d %q", taken, resp.StatusCode, body)
		}
		cancel()
		<-s.Done()
		if _, err := http.Get("http://" + addr.String() + "/healthz"); err == nil {
			t.Errorf("taken=%v: the healthz port still answers after shutdown", taken)
		}
	}
}

// listening reports whether s's healthz port listens.
func listening(s *Server) bool {
	select {
	case <-s.healthzUp:
		return true
	default:
		return false
	}
}
