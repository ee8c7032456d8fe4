package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

func TestHealthz(t *testing.T) {
	p := newProvider(t)
	s := newServer(t, p, AlwaysAllow{})
	tests := []struct {
		name       string
		health     error
		path       string
		wantStatus int
		wantBody   string
	}{
		{"healthy", nil, "/healthz", 200, "ok"},
		{"healthy verbose", nil, "/healthz?verbose", 200, "[+]ping ok\n[+]log ok\n[+]syncloop ok\nhealthz check passed\n"},
		{"sync loop stalled", errors.New("sync loop last ran 6m0s ago"), "/healthz", 500,
			"[+]ping ok\n[+]log ok\n[-]syncloop failed: sync loop last ran 6m0s ago\nhealthz check failed\n"},
		{"failing check excluded", errors.New("pleg unhealthy"), "/healthz?exclude=syncloop", 200, "ok"},
		{"ping while unhealthy", errors.New("pleg unhealthy"), "/healthz/ping", 200, "ok"},
		{"log while unhealthy", errors.New("pleg unhealthy"), "/healthz/log", 200, "ok"},
		{"syncloop healthy", nil, "/healthz/syncloop", 200, "ok"},
		{"syncloop unhealthy", errors.New("PLEG last relisted 3m30s ago"), "/healthz/syncloop", 500,
			"internal server error: syncloop check failed: PLEG last relisted 3m30s ago\n"},
		{"unknown check", nil, "/healthz/nope", 404, "404 page not found\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p.setHealth(tc.health)
			for port, h := range map[string]http.Handler{"read-only": s.ReadOnlyHandler(), "secure": s.SecureHandler()} {
				code, body := get(t, h, tc.path, testToken)
				if code != tc.wantStatus || body != tc.wantBody {
					t.Errorf("%s port: got %d %q, want %d %q", port, code, body, tc.wantStatus, tc.wantBody)
				}
			}
		})
	}
}

func TestPods(t *testing.T) {
	p := newProvider(t)
	a, b := logPod(2), logPod(0)
	b.Name, b.UID = "db", "uid-2"
	p.setPods(a, b)
	s := newServer(t, p, AlwaysAllow{})
	for _, h := range []http.Handler{s.ReadOnlyHandler(), s.SecureHandler()} {
		code, body := get(t, h, "/pods", testToken)
		if code != 200 {
			t.Fatalf("GET /pods: %d %s", code, body)
		}
		var raw map[string]any
		if err := json.Unmarshal([]byte(body), &raw); err != nil {
			t.Fatalf("decode: %v", err)
		}
		if raw["kind"] != "PodList" || raw["apiVersion"] != "v1" {
			t.Errorf("kind/apiVersion = %v/%v, want PodList/v1", raw["kind"], raw["apiVersion"])
		}
		var list corev1.PodList
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatalf("decode PodList: %v", err)
		}
		want := []corev1.Pod{*a, *b}
		if diff := cmp.Diff(want, list.Items); diff != "" {
			t.Errorf("items (-want +got):\n%s", diff)
		}
	}

	p.setPods()
	_, body := get(t, s.ReadOnlyHandler(), "/pods", "")
	if !strings.Contains(body, `"items":[]`) {
		t.Errorf("no pods: %s, want an empty items list", body)
	}
}

// startContainer creates a pod sandbox and a running container with the
// given working set in the fake runtime.
func startContainer(t *testing.T, rt cri.RuntimeService, pod *corev1.Pod, name string, memory string) {
	t.Helper()
	ctx := context.Background()
	ref := podstate.PodRef{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)},
		Labels:   podstate.SandboxLabels(ref),
	}
	sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: "busybox:latest"},
		Labels:   podstate.ContainerLabels(ref, name),
		Envs:     []*runtimeapi.KeyValue{{Key: "FAKECRI_MEMORY", Value: []byte(memory)}},
	}
	id, err := rt.CreateContainer(ctx, sb, cfg, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
}

func TestStatsSummary(t *testing.T) {
	p := newProvider(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID("uid-1")}}
	p.setPods(pod)
	startContainer(t, p.runtime, pod, "app", "10Mi")
	s := newServer(t, p, AlwaysAllow{})

	code, body := get(t, s.ReadOnlyHandler(), "/stats/summary", "")
	if code != 200 {
		t.Fatalf("GET /stats/summary: %d %s", code, body)
	}
	var sum statsv1alpha1.Summary
	if err := json.Unmarshal([]byte(body), &sum); err != nil {
		t.Fatalf("decode Summary: %v", err)
	}
	if sum.Node.NodeName != "node-a" || sum.Node.Memory == nil || *sum.Node.Memory.WorkingSetBytes != 1<<30 || sum.Node.Fs == nil {
		t.Errorf("node stats: %+v", sum.Node)
	}
	if len(sum.Pods) != 1 || sum.Pods[0].PodRef != (statsv1alpha1.PodReference{Name: "web", Namespace: "default", UID: "uid-1"}) {
		t.Fatalf("pods: %+v", sum.Pods)
	}
	ps := sum.Pods[0]
	if len(ps.Containers) != 1 || ps.Containers[0].Name != "app" || ps.Containers[0].Memory == nil || *ps.Containers[0].Memory.WorkingSetBytes != 10<<20 {
		t.Errorf("containers: %+v", ps.Containers)
	}
	if ps.Memory == nil || *ps.Memory.WorkingSetBytes != 10<<20 || ps.Containers[0].Rootfs == nil {
		t.Errorf("pod memory %+v, rootfs %+v", ps.Memory, ps.Containers[0].Rootfs)
	}

	// only_cpu_and_memory keeps CPU and memory only.
	_, body = get(t, s.ReadOnlyHandler(), "/stats/summary?only_cpu_and_memory=true", "")
	var small statsv1alpha1.Summary
	if err := json.Unmarshal([]byte(body), &small); err != nil {
		t.Fatalf("decode Summary: %v", err)
	}
	if small.Node.Fs != nil || small.Node.Memory == nil || small.Pods[0].Containers[0].Rootfs != nil || small.Pods[0].Containers[0].Memory == nil || small.Pods[0].EphemeralStorage != nil {
		t.Errorf("only_cpu_and_memory kept more or less than CPU and memory: %s", body)
	}

	if code, body := get(t, s.ReadOnlyHandler(), "/stats/summary?only_cpu_and_memory=maybe", ""); code != 400 || !strings.Contains(body, "only_cpu_and_memory") {
		t.Errorf("malformed only_cpu_and_memory: %d %q, want 400 naming the parameter", code, body)
	}
}

// failingRuntime fails one stats call.
type failingRuntime struct {
	cri.RuntimeService
	sandboxErr, containerErr error
}

func (r failingRuntime) ListPodSandboxStats(ctx context.Context, f *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	if r.sandboxErr != nil {
		return nil, r.sandboxErr
	}
	return r.RuntimeService.ListPodSandboxStats(ctx, f)
}

func (r failingRuntime) ListContainerStats(ctx context.Context, f *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	if r.containerErr != nil {
		return nil, r.containerErr
	}
	return r.RuntimeService.ListContainerStats(ctx, f)
}

func TestStatsSummaryErrors(t *testing.T) {
	p := newProvider(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-1"}}
	p.setPods(pod)
	startContainer(t, p.runtime, pod, "app", "10Mi")
	base := p.runtime
	s := newServer(t, p, AlwaysAllow{})

	// containerd 1.6 has no ListPodSandboxStats: pod stats are summed.
	p.runtime = failingRuntime{RuntimeService: base, sandboxErr: statusUnimplemented()}
	code, body := get(t, s.ReadOnlyHandler(), "/stats/summary", "")
	var sum statsv1alpha1.Summary
	if code != 200 || json.Unmarshal([]byte(body), &sum) != nil || len(sum.Pods) != 1 || sum.Pods[0].Memory == nil || *sum.Pods[0].Memory.WorkingSetBytes != 10<<20 {
		t.Errorf("without sandbox stats: %d %s", code, body)
	}

	// A failed ListContainerStats (containerd fails it for one bad
	// container): each running container is asked alone.
	p.runtime = failingRuntime{RuntimeService: base, containerErr: errors.New("runtime down")}
	code, body = get(t, s.ReadOnlyHandler(), "/stats/summary", "")
	sum = statsv1alpha1.Summary{}
	if code != 200 || json.Unmarshal([]byte(body), &sum) != nil || len(sum.Pods) != 1 || len(sum.Pods[0].Containers) != 1 ||
		sum.Pods[0].Containers[0].Memory == nil || *sum.Pods[0].Containers[0].Memory.WorkingSetBytes != 10<<20 {
		t.Errorf("without the container stats list: %d %s", code, body)
	}
	p.runtime = base
	p.machine = fakeMachine{err: errors.New("no /proc")}
	if code, body := get(t, s.ReadOnlyHandler(), "/stats/summary", ""); code != 500 || !strings.Contains(body, "no /proc") {
		t.Errorf("machine error: %d %q", code, body)
	}
}

func TestMetricsAndRouting(t *testing.T) {
	p := newProvider(t)
	p.setPods(logPod(0))
	writeLog(t, logPath(p, "app", 0), "2025-01-01T00:00:00Z stdout F hi")
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "kubelet_running_pods 1\n") })
	probes := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "prober_probe_total 3\n") })
	with := newServer(t, p, AlwaysAllow{}, func(c *Config) { c.Metrics, c.ProbeMetrics = metrics, probes })
	without := newServer(t, p, AlwaysAllow{})

	tests := []struct {
		name       string
		h          http.Handler
		method     string
		path       string
		wantStatus int
		wantBody   string
	}{
		{"metrics", with.ReadOnlyHandler(), "GET", "/metrics", 200, "kubelet_running_pods 1\n"},
		{"metrics secure", with.SecureHandler(), "GET", "/metrics", 200, "kubelet_running_pods 1\n"},
		{"probe metrics", with.ReadOnlyHandler(), "GET", "/metrics/probes", 200, "prober_probe_total 3\n"},
		{"no metrics handler", without.ReadOnlyHandler(), "GET", "/metrics", 404, "404 page not found\n"},
		{"no probe metrics handler", without.SecureHandler(), "GET", "/metrics/probes", 404, "404 page not found\n"},
		{"container logs are not on the read-only port", with.ReadOnlyHandler(), "GET", "/containerLogs/default/web/app", 404, "404 page not found\n"},
		{"container logs on the secure port", with.SecureHandler(), "GET", "/containerLogs/default/web/app", 200, "hi\n"},
		{"unknown path", with.SecureHandler(), "GET", "/nope", 404, "404 page not found\n"},
		{"wrong method", with.SecureHandler(), "POST", "/pods", 405, "Method Not Allowed\n"},
		{"wrong method read-only", with.ReadOnlyHandler(), "DELETE", "/stats/summary", 405, "Method Not Allowed\n"},
		{"container logs without a container", with.SecureHandler(), "GET", "/containerLogs/default/web", 404, "404 page not found\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, tc.h, tc.method, tc.path, testToken)
			if code != tc.wantStatus || body != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", code, body, tc.wantStatus, tc.wantBody)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	p := newProvider(t)
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"port too large", Config{Port: 70000}, "secure port 70000"},
		{"negative port", Config{Port: -1}, "secure port -1"},
		{"read-only port too large", Config{ReadOnlyPort: 65536}, "read-only port 65536"},
		{"same ports", Config{Port: 10250, ReadOnlyPort: 10250}, "must differ"},
		{"healthz port too large", Config{HealthzAddress: "127.0.0.1", HealthzPort: 65536}, "healthz port 65536: must be 0 (off) or between 1 and 65535"},
		{"healthz address not an IP", Config{HealthzAddress: "localhost", HealthzPort: 10248}, `healthz address "localhost": must be an IP address`},
		{"cert without key", Config{TLSCertFile: "/x.crt"}, "TLSCertFile and TLSKeyFile must be given together"},
		{"missing cert files", Config{TLSCertFile: "/nonexistent/x.crt", TLSKeyFile: "/nonexistent/x.key"}, "/nonexistent/x.crt"},
		{"nowhere to keep a self-signed certificate", Config{}, "no CertDir"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(p, tc.cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// statusUnimplemented is the gRPC error of a runtime without the method.
func statusUnimplemented() error {
	return status.Error(codes.Unimplemented, "method ListPodSandboxStats not implemented")
}

// registeringProvider also reports why the node is not registered yet.
type registeringProvider struct {
	*fakeProvider
	reg error
}

func (p registeringProvider) NodeRegistration() error { return p.reg }

// TestHealthzRegistrationDetail: a node waiting for its Node object
// (--register-node=false) stays healthy and says so in the verbose
// listing; once registered the line is plain.
func TestHealthzRegistrationDetail(t *testing.T) {
	waiting := errors.New(`node "node-a" does not exist yet: with --register-node=false an administrator creates it`)
	for _, tc := range []struct {
		name string
		reg  error
		want string
	}{
		{"waiting", waiting, "[+]ping ok\n[+]log ok\n[+]syncloop ok\n[+]node-registration ok (waiting: " + waiting.Error() + ")\nhealthz check passed\n"},
		{"registered", nil, "[+]ping ok\n[+]log ok\n[+]syncloop ok\n[+]node-registration ok\nhealthz check passed\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, registeringProvider{newProvider(t), tc.reg}, AlwaysAllow{})
			if code, body := get(t, s.ReadOnlyHandler(), "/healthz?verbose", testToken); code != 200 || body != tc.want {
				t.Errorf("got %d %q, want 200 %q", code, body, tc.want)
			}
			if code, body := get(t, s.ReadOnlyHandler(), "/healthz", testToken); code != 200 || body != "ok" {
				t.Errorf("plain /healthz: got %d %q, want 200 ok", code, body)
			}
		})
	}
}

// /metrics/resource and /metrics/cadvisor serve the stats of the running
// container on both ports; on the secure port they are authorized as
// nodes/metrics.
func TestStatsMetricsEndpoints(t *testing.T) {
	p := newProvider(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-1"}}
	p.setPods(pod)
	startContainer(t, p.runtime, pod, "app", "10Mi")
	s := newServer(t, p, AlwaysAllow{})
	for path, want := range map[string]string{
		"/metrics/resource": `container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 1.048576e+07`,
		"/metrics/cadvisor": `container_memory_working_set_bytes{container="app",`,
	} {
		code, body := get(t, s.ReadOnlyHandler(), path, "")
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, want 200 with %q in:\n%s", path, code, want, body)
		}
	}
	if code, body := get(t, s.ReadOnlyHandler(), "/metrics/resource", ""); !strings.Contains(body, "resource_scrape_error 0") {
		t.Errorf("GET /metrics/resource: %d, no resource_scrape_error 0 in:\n%s", code, body)
	}
}
