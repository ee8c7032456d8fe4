package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfigzWrapsTheConfiguration(t *testing.T) {
	p := newProvider(t)
	s := newServer(t, p, AlwaysAllow{}, func(c *Config) {
		c.Configz = map[string]any{"kind": "KubeletConfiguration", "maxPods": 42}
	})
	code, body := get(t, s.SecureHandler(), "/configz", testToken)
	if code != http.StatusOK {
		t.Fatalf("GET /configz = %d %q", code, body)
	}
	var got map[string]map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{"kubeletconfig": {"kind": "KubeletConfiguration", "maxPods": float64(42)}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("/configz (-want +got):\n%s", d)
	}
	if code, _ := get(t, s.ReadOnlyHandler(), "/configz", ""); code != http.StatusNotFound {
		t.Errorf("/configz on the read-only port = %d, want 404", code)
	}
}

func TestSystemLogsAuthorizedAsNodesLog(t *testing.T) {
	p := newProvider(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "syslog"), []byte("boot ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	authz := &recordingAuthz{decide: func(c sarCall) (bool, error) { return c.Subresource == "log", nil }}
	s := newServer(t, p, authz, func(c *Config) { c.SystemLogs, c.SystemLogsDir = true, dir })
	if code, body := get(t, s.SecureHandler(), "/logs/syslog", testToken); code != 200 || body != "boot ok\n" {
		t.Errorf("GET /logs/syslog = %d %q, want 200 %q", code, body, "boot ok\n")
	}
	if code, body := get(t, s.SecureHandler(), "/logs/", testToken); code != 200 || !strings.Contains(body, `href="syslog"`) {
		t.Errorf("GET /logs/ = %d %q, want a listing naming syslog", code, body)
	}
	if code, _ := get(t, s.SecureHandler(), "/logs/../../etc/passwd", testToken); code == 200 {
		t.Errorf("GET /logs/../../etc/passwd answered 200")
	}
	want := sarCall{User: "alice", Groups: []string{"devs", AuthenticatedGroup}, Verb: "get", Resource: "nodes", Subresource: "log", Name: "node-a"}
	if calls := authz.recorded(); len(calls) == 0 || !cmp.Equal(calls[0], want) {
		t.Errorf("authorization calls %+v, want the first %+v", calls, want)
	}

	off := newServer(t, p, AlwaysAllow{})
	if code, body := get(t, off.SecureHandler(), "/logs/syslog", testToken); code != http.StatusMethodNotAllowed || !strings.Contains(body, "logs endpoint is disabled.") {
		t.Errorf("GET /logs/syslog with the handler off = %d %q", code, body)
	}
}

func TestCheckpointNotSupported(t *testing.T) {
	p := newProvider(t)
	p.setPods(logPod(0))
	s := newServer(t, p, AlwaysAllow{})
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/checkpoint/default/web/app", http.StatusNotImplemented, "checkpointing of default/web/app failed: lockstep does not support container checkpointing"},
		{"/checkpoint/default/web/nope", http.StatusNotFound, "container nope does not exist"},
		{"/checkpoint/default/gone/app", http.StatusNotFound, "pod default/gone does not exist"},
	} {
		code, body := do(t, s.SecureHandler(), http.MethodPost, tc.path, testToken)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("POST %s = %d %q, want %d containing %q", tc.path, code, body, tc.code, tc.body)
		}
	}
}

func TestProfilingBehindAuthorization(t *testing.T) {
	p := newProvider(t)
	authz := &recordingAuthz{}
	s := newServer(t, p, authz, func(c *Config) { c.Profiling = true })
	if code, body := get(t, s.SecureHandler(), "/debug/pprof/", testToken); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("GET /debug/pprof/ = %d, want the index", code)
	}
	if code, body := get(t, s.SecureHandler(), "/debug/pprof/goroutine?debug=1", testToken); code != 200 || !strings.Contains(body, "goroutine profile") {
		t.Errorf("GET /debug/pprof/goroutine = %d", code)
	}
	if code, _ := get(t, s.SecureHandler(), "/debug/pprof/", ""); code != http.StatusUnauthorized {
		t.Errorf("anonymous GET /debug/pprof/ = %d, want 401", code)
	}
	if calls := authz.recorded(); len(calls) == 0 || calls[0].Subresource != "proxy" {
		t.Errorf("pprof authorized as %+v, want nodes/proxy", calls)
	}
	if code, _ := get(t, s.ReadOnlyHandler(), "/debug/pprof/", ""); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ on the read-only port = %d, want 404", code)
	}
	off := newServer(t, p, AlwaysAllow{})
	if code, body := get(t, off.SecureHandler(), "/debug/pprof/", testToken); code != http.StatusMethodNotAllowed || !strings.Contains(body, "profiling endpoint is disabled.") {
		t.Errorf("GET /debug/pprof/ with profiling off = %d %q", code, body)
	}
}
