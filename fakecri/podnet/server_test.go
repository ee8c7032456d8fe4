package podnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
)

// manualClock is a runtime clock the test moves; Sleep moves it too.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Sleep(d time.Duration) { c.Advance(d) }

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// ranges hands each test a /24 of its own in 127.<100+pid%100>.0.0/16, so
// tests of this process, and of other processes running at the same time,
// do not bind the same addresses.
var ranges atomic.Uint32

func testRange(t testing.TB) netip.Prefix {
	n := ranges.Add(1)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{127, byte(100 + os.Getpid()%100), byte(n), 0}), 24)
}

// world is a runtime on a manual clock with a loopback pod network, and
// its server.
type world struct {
	t     testing.TB
	rt    *fakecri.Runtime
	clock *manualClock
	srv   *Server
	ctx   context.Context
}

func newWorld(t testing.TB, mods ...func(*fakecri.Config)) *world {
	t.Helper()
	w := &world{t: t, clock: &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, ctx: context.Background()}
	cfg := fakecri.Config{Clock: w.clock, LoopbackCIDR: testRange(t), Files: noFiles{}}
	for _, m := range mods {
		m(&cfg)
	}
	w.rt = fakecri.New(cfg)
	w.srv = Start(w.rt, nil)
	t.Cleanup(w.srv.Stop)
	return w
}

// noFiles drops container logs.
type noFiles struct{}

func (noFiles) AppendFile(string, []byte) error { return nil }

// pod runs a sandbox declaring ports and returns its ID and IP.
func (w *world) pod(name string, hostNet bool, ports ...int32) (string, string) {
	w.t.Helper()
	cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: "uid-" + name}}
	for _, p := range ports {
		cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{ContainerPort: p})
	}
	if hostNet {
		cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}}
	}
	id, err := w.rt.RunPodSandbox(w.ctx, cfg, "")
	if err != nil {
		w.t.Fatal(err)
	}
	st, err := w.rt.PodSandboxStatus(w.ctx, id, false)
	if err != nil {
		w.t.Fatal(err)
	}
	return id, st.GetStatus().GetNetwork().GetIp()
}

// run starts a container with env "K=V" pairs in sandbox sb, and syncs
// the server.
func (w *world) run(sb, name string, env ...string) string {
	w.t.Helper()
	cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: "busybox"}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: k, Value: []byte(v)})
	}
	id, err := w.rt.CreateContainer(w.ctx, sb, cfg, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.rt.StartContainer(w.ctx, id); err != nil {
		w.t.Fatal(err)
	}
	w.srv.Sync()
	return id
}

// advance moves the runtime's clock and syncs the server.
func (w *world) advance(d time.Duration) {
	w.clock.Advance(d)
	w.srv.Sync()
}

// client is a prober-like HTTP client: no keep-alive, no redirects
// followed, a short timeout for hanging endpoints.
var client = &http.Client{
	Transport:     &http.Transport{DisableKeepAlives: true, Proxy: nil},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       300 * time.Millisecond,
}

// get renders a GET's outcome: "200 body", "302 >location", or the kind
// of error ("refused", "timeout", "EOF").
func get(url string) string {
	resp, err := client.Get(url)
	if err != nil {
		return errKind(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if loc := resp.Header.Get("Location"); loc != "" {
		return fmt.Sprintf("%d >%s", resp.StatusCode, loc)
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
}

// dial renders a TCP connect's outcome: "up", "refused" or "timeout".
func dial(addr string) string {
	c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return errKind(err)
	}
	c.Close()
	return "up"
}

// errKind names a network error.
func errKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return "EOF"
	}
	return err.Error()
}

// TestHTTPOverScriptTime: a container's FAKECRI_HTTP rules answer on its
// sandbox's loopback address, per path, following the script on the
// runtime's clock; a port no rule names refuses.
func TestHTTPOverScriptTime(t *testing.T) {
	w := newWorld(t)
	sb, ip := w.pod("web", false)
	if !strings.HasPrefix(ip, "127.") {
		t.Fatalf("sandbox IP %q, want a loopback address", ip)
	}
	w.run(sb, "app", "FAKECRI_HTTP=8080/healthz=200,10s:500;8080/slow=hang;8080/gone=down;8080/moved=302>http://elsewhere/;8081=down,5s:204")
	base := "http://" + net.JoinHostPort(ip, "8080")
	other := "http://" + net.JoinHostPort(ip, "8081")
	type row struct{ Healthz, Root, Slow, Gone, Moved, Port8081, Port81 string }
	measure := func() row {
		return row{
			Healthz:  get(base + "/healthz"),
			Root:     get(base + "/"),
			Slow:     get(base + "/slow"),
			Gone:     get(base + "/gone"),
			Moved:    get(base + "/moved"),
			Port8081: get(other + "/x"),
			Port81:   get("http://" + net.JoinHostPort(ip, "81") + "/"),
		}
	}
	got := []row{measure()}
	w.advance(5 * time.Second)
	got = append(got, measure())
	w.advance(5 * time.Second)
	got = append(got, measure())
	want := []row{
		{Healthz: "200 200", Root: "200 200", Slow: "timeout", Gone: "EOF", Moved: "302 >http://elsewhere/", Port8081: "refused", Port81: "refused"},
		{Healthz: "200 200", Root: "200 200", Slow: "timeout", Gone: "EOF", Moved: "302 >http://elsewhere/", Port8081: "204 ", Port81: "refused"},
		{Healthz: "500 500", Root: "200 200", Slow: "timeout", Gone: "EOF", Moved: "302 >http://elsewhere/", Port8081: "204 ", Port81: "refused"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers at 0, 5 and 10 s (-want +got):\n%s", diff)
	}
}

// TestTCPUpDownHang: FAKECRI_TCP's down refuses, up accepts and hang
// leaves the connect unanswered until the client's timeout.
func TestTCPUpDownHang(t *testing.T) {
	w := newWorld(t)
	sb, ip := w.pod("db", false)
	w.run(sb, "pg", "FAKECRI_TCP=5432=down,5s:up,10s:hang,15s:up")
	addr := net.JoinHostPort(ip, "5432")
	var got []string
	for range 4 {
		got = append(got, dial(addr))
		w.advance(5 * time.Second)
	}
	if diff := cmp.Diff([]string{"refused", "up", "timeout", "up"}, got); diff != "" {
		t.Errorf("connects at 0, 5, 10 and 15 s (-want +got):\n%s", diff)
	}
}

// TestGRPCHealth: FAKECRI_GRPC answers grpc.health.v1 checks per service,
// over time; a down port refuses.
func TestGRPCHealth(t *testing.T) {
	w := newWorld(t)
	sb, ip := w.pod("api", false)
	w.run(sb, "srv", "FAKECRI_GRPC=9090=not_serving,5s:serving;9090/db=unknown;9090/cache=service_unknown;9091=down")
	check := func(port, service string) string {
		conn, err := grpc.NewClient(net.JoinHostPort(ip, port), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			if strings.Contains(err.Error(), "connection refused") {
				return "refused"
			}
			return err.Error()
		}
		return resp.GetStatus().String()
	}
	measure := func() []string {
		return []string{check("9090", ""), check("9090", "db"), check("9090", "cache"), check("9091", "")}
	}
	got := [][]string{measure()}
	w.advance(5 * time.Second)
	got = append(got, measure())
	want := [][]string{
		{"NOT_SERVING", "UNKNOWN", "SERVICE_UNKNOWN", "refused"},
		{"SERVING", "UNKNOWN", "SERVICE_UNKNOWN", "refused"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("health checks at 0 and 5 s (-want +got):\n%s", diff)
	}
	// The same port serves plain HTTP too (HTTP/1.1 and gRPC's HTTP/2 share it).
	if got := get("http://" + net.JoinHostPort(ip, "9090") + "/"); got != "200 200" {
		t.Errorf("GET on the gRPC port: %s, want 200", got)
	}
}

// TestListenersFollowTheContainer: a port listens while its container
// runs and closes when it exits (at its scripted time), is stopped or
// removed, cutting a hanging request; a removed sandbox's address goes to
// the next sandbox, which answers its own script there.
func TestListenersFollowTheContainer(t *testing.T) {
	w := newWorld(t)
	sb, ip := w.pod("a", false, 80)
	w.run(sb, "app", "FAKECRI_HTTP=8080/slow=hang", "FAKECRI_EXIT_AFTER=20s")
	web := "http://" + net.JoinHostPort(ip, "8080") + "/"
	declared := net.JoinHostPort(ip, "80")
	if got := []string{get(web), dial(declared)}; !cmp.Equal(got, []string{"200 200", "up"}) {
		t.Errorf("while running: %q, want 200 and a declared port up", got)
	}
	// The connections of the requests above are closed by the client;
	// the server drops them when it reads their end: wait for that, so
	// the count below is the hanging request's own.
	waitFor(t, "the earlier requests' connections to close", func() bool { return w.srv.openConns(ip, 8080) == 0 })
	hung := make(chan string, 1)
	go func() {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
		_, err := c.Get(web + "slow")
		hung <- fmt.Sprint(err)
	}()
	waitFor(t, "the hanging request to arrive", func() bool { return w.srv.openConns(ip, 8080) > 0 })
	w.advance(20 * time.Second) // the scripted exit
	select {
	case err := <-hung:
		if !strings.Contains(err, "EOF") && !strings.Contains(err, "reset") {
			t.Errorf("hanging request after the container exited: %s, want the connection closed", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("hanging request still open 5 s after its container exited")
	}
	if got := []string{get(web), dial(declared)}; !cmp.Equal(got, []string{"refused", "refused"}) {
		t.Errorf("after the exit: %q, want both refused", got)
	}

	second := w.run(sb, "app2", "FAKECRI_HTTP=8080=503")
	if got := get(web); got != "503 503" {
		t.Errorf("restarted container: %s, want 503", got)
	}
	if err := w.rt.StopContainer(w.ctx, second, 0); err != nil {
		t.Fatal(err)
	}
	w.srv.Sync()
	if got := get(web); got != "refused" {
		t.Errorf("after StopContainer: %s, want refused", got)
	}
	w.run(sb, "app3", "FAKECRI_TCP=7000=up")
	if err := w.rt.RemovePodSandbox(w.ctx, sb); err != nil {
		t.Fatal(err)
	}
	w.srv.Sync()
	if got := dial(net.JoinHostPort(ip, "7000")); got != "refused" {
		t.Errorf("after RemovePodSandbox: %s, want refused", got)
	}

	next, nextIP := w.pod("b", false)
	if nextIP != ip {
		t.Errorf("next sandbox got %s, want the removed one's %s again", nextIP, ip)
	}
	w.run(next, "b", "FAKECRI_HTTP=8080=418")
	if got := get(web); got != "418 418" {
		t.Errorf("the reused address: %s, want the new sandbox's 418", got)
	}
}

// TestHostNetworkOnTheNodeAddress: host-network sandboxes have no IP of
// their own and answer at Config.NodeAddress.
func TestHostNetworkOnTheNodeAddress(t *testing.T) {
	node := testRange(t).Addr().Next()
	w := newWorld(t, func(c *fakecri.Config) { c.NodeAddress = node })
	sb, ip := w.pod("exporter", true)
	if ip != "" {
		t.Errorf("host-network sandbox IP %q, want none", ip)
	}
	w.run(sb, "exp", "FAKECRI_HTTP=9100/metrics=200")
	if got := get("http://" + net.JoinHostPort(node.String(), "9100") + "/metrics"); got != "200 200" {
		t.Errorf("GET on the node address: %s, want 200", got)
	}
}

// TestServerFollowsTheRealClock: on the real clock the server opens a
// listener by itself when a container starts and when its script's time
// comes, without Sync.
func TestServerFollowsTheRealClock(t *testing.T) {
	rt := fakecri.New(fakecri.Config{LoopbackCIDR: testRange(t), Files: noFiles{}})
	srv := Start(rt, nil)
	defer srv.Stop()
	ctx := context.Background()
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := rt.PodSandboxStatus(ctx, sb, false)
	addr := net.JoinHostPort(st.GetStatus().GetNetwork().GetIp(), "8080")
	id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
		Envs: []*runtimeapi.KeyValue{{Key: "FAKECRI_TCP", Value: []byte("8080=up,2s:down")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the port to open after start", func() bool { return dial(addr) == "up" })
	waitFor(t, "the port to close at 2 s", func() bool { return dial(addr) == "refused" })
}

// waitFor polls cond for at most 5 s of wall time: real sockets and the
// server's own goroutine make it unavoidable.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: still not after 5 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkSandboxes creates, starts and removes 1,000 sandboxes of one
// container each, with the pod network off (virtual IPs) or served on
// loopback, the container listening on a declared and a scripted port, or
// on none (as bench-compare's pods: no ports, no endpoint scripts); it
// reports wall and CPU time per sandbox.
func BenchmarkSandboxes(b *testing.B) {
	for _, tc := range []struct {
		name          string
		served, ports bool
	}{{"off", false, true}, {"loopback", true, true}, {"loopback-no-ports", true, false}} {
		b.Run(tc.name, func(b *testing.B) {
			const n = 1000
			cpu0 := cpuTime()
			for range b.N {
				benchSandboxes(b, n, tc.served, tc.ports)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/sandbox")
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/sandbox")
		})
	}
}

// cpuTime is the process's user and system CPU time so far (the
// server's goroutines and the kernel's socket work included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchSandboxes is one round of BenchmarkSandboxes.
func benchSandboxes(b *testing.B, n int, served, ports bool) {
	cfg := fakecri.Config{Files: noFiles{}}
	if served {
		cfg.LoopbackCIDR = netip.PrefixFrom(netip.AddrFrom4([4]byte{127, byte(100 + os.Getpid()%100), 192, 0}), 20)
	}
	rt := fakecri.New(cfg)
	var srv *Server
	if served {
		srv = Start(rt, nil)
		defer srv.Stop()
	}
	ctx := context.Background()
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Namespace: "ns"}}
	ctrCfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}}
	if ports {
		sbCfg.PortMappings = []*runtimeapi.PortMapping{{ContainerPort: 80}}
		ctrCfg.Envs = []*runtimeapi.KeyValue{{Key: "FAKECRI_HTTP", Value: []byte("8080/healthz=200")}}
	}
	var sbs []string
	for i := range n {
		sbCfg.Metadata.Name, sbCfg.Metadata.Uid = fmt.Sprint("p", i), fmt.Sprint("u", i)
		sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
		if err != nil {
			b.Fatal(err)
		}
		id, err := rt.CreateContainer(ctx, sb, ctrCfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := rt.StartContainer(ctx, id); err != nil {
			b.Fatal(err)
		}
		sbs = append(sbs, sb)
	}
	if srv != nil {
		srv.Sync()
		want := 0
		if ports {
			want = 2 * n
		}
		if got := srv.listeners(); got != want {
			b.Fatalf("%d listeners, want %d", got, want)
		}
	}
	for _, sb := range sbs {
		if err := rt.RemovePodSandbox(ctx, sb); err != nil {
			b.Fatal(err)
		}
	}
	if srv != nil {
		srv.Sync()
		if got := srv.listeners(); got != 0 {
			b.Fatalf("%d listeners after removing every sandbox, want 0", got)
		}
	}
}

// openConns is how many connections addr:port's socket has open.
func (s *Server) openConns(addr string, port int) int {
	s.recMu.Lock()
	sock := s.socks[addr][port]
	s.recMu.Unlock()
	if sock == nil {
		return 0
	}
	sock.mu.Lock()
	defer sock.mu.Unlock()
	return len(sock.conns)
}

// listeners is how many sockets listen.
func (s *Server) listeners() int {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	n := 0
	for _, ports := range s.socks {
		n += len(ports)
	}
	return n
}
