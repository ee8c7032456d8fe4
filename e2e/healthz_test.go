//go:build e2e

package e2e

import (
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestHealthzPort: the node serves plain-HTTP /healthz on its healthz
// port at 127.0.0.1 (--healthz-port, hack/e2e/run.sh picks a free one;
// the kubelet's default is 10248), as the node suite's
// http://127.0.0.1:10248/healthz checks expect, and nothing else there
// (no pods, stats, metrics, configuration or profiles without
// authentication, CVE-2019-11248); it does not listen on the node's IP.
func TestHealthzPort(t *testing.T) {
	e := setup(t)
	port, err := strconv.Atoi(os.Getenv("LOCKSTEP_E2E_HEALTHZ_PORT"))
	if err != nil {
		t.Fatalf("LOCKSTEP_E2E_HEALTHZ_PORT: %v (hack/e2e/run.sh sets it)", err)
	}
	base := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	hc := &http.Client{Timeout: 10 * time.Second}
	type answer struct {
		Code int
		Body string
	}
	fetch := func(path string) answer {
		resp, err := hc.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s%s: %v", base, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, string(b)}
	}
	paths := []string{"/healthz", "/healthz/ping", "/healthz/syncloop",
		"/pods", "/stats/summary", "/metrics", "/metrics/cadvisor", "/metrics/resource", "/metrics/probes",
		"/configz", "/debug/pprof/", "/logs/", "/containerLogs/kube-system/x/y", "/runningpods/"}
	// The node may have been restarted by the test before (its new
	// process listens a moment after the Node still shows Ready).
	poll(t, 30*time.Second, "the healthz port to answer", func() (bool, error) {
		resp, err := hc.Get(base + "/healthz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return true, nil
	})
	got, want := map[string]answer{}, map[string]answer{}
	for _, p := range paths {
		got[p] = fetch(p)
		want[p] = answer{404, "404 page not found\n"}
	}
	for _, p := range paths[:3] {
		want[p] = answer{200, "ok"}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("healthz port answers (-want +got):\n%s", diff)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(e.ip, strconv.Itoa(port)), 5*time.Second); err == nil {
		c.Close()
		t.Errorf("the healthz port answers on the node's IP %s: want 127.0.0.1 only (--healthz-bind-address)", e.ip)
	}
}
