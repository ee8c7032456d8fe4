package probenet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/lockstep-dev/lockstep/node/deps"
)

func TestHTTPGetFollowsNoRedirect(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "http://elsewhere.example/", http.StatusFound)
		default:
			w.Write([]byte(r.Host + " " + r.Header.Get("User-Agent")))
		}
	}))
	defer srv.Close()
	n := New()
	got, err := n.HTTPGet(context.Background(), deps.HTTPRequest{URL: srv.URL + "/moved"})
	if err != nil {
		t.Fatal(err)
	}
	if got.StatusCode != http.StatusFound || got.Location != "http://elsewhere.example/" {
		t.Errorf("redirect: got %d %q; want 302 to http://elsewhere.example/", got.StatusCode, got.Location)
	}
	got, err = n.HTTPGet(context.Background(), deps.HTTPRequest{URL: srv.URL + "/", Host: "example.com",
		Header: map[string][]string{"User-Agent": {"kube-probe/1.37"}}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(deps.HTTPResponse{StatusCode: 200, Body: []byte("example.com kube-probe/1.37")}, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func TestDialTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	n := New()
	if err := n.DialTCP(context.Background(), "127.0.0.1", port); err != nil {
		t.Errorf("dial an open port: %v", err)
	}
	l.Close()
	if err := n.DialTCP(context.Background(), "127.0.0.1", port); err == nil {
		t.Errorf("dial a closed port: no error")
	}
}

func TestGRPCHealth(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(s, hs)
	go s.Serve(l)
	defer s.Stop()
	port := l.Addr().(*net.TCPAddr).Port
	n := New()
	for service, want := range map[string]string{"": "SERVING", "db": "NOT_SERVING"} {
		got, err := n.GRPCHealth(context.Background(), "127.0.0.1", port, service)
		if err != nil || got != want {
			t.Errorf("service %q: %q, %v; want %q", service, got, err, want)
		}
	}
	if _, err := n.GRPCHealth(context.Background(), "127.0.0.1", port, "nope"); status.Code(err) != codes.NotFound {
		t.Errorf("unknown service: %v; want the bare NotFound status", err)
	}
	// A port nobody listens on: retried until ctx's deadline, as the
	// kubelet's blocking dial, then ctx's error.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := n.GRPCHealth(ctx, "127.0.0.1", closedPort, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("refused port: %v; want context.DeadlineExceeded", err)
	}
}

// A probe GET to a target that never answers fails, after the probe's
// timeout, with net/http's client timeout error, as the kubelet's probes
// report it, even when ctx carries the same deadline.
func TestHTTPGetTimeoutIsTheClientTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := New().HTTPGet(ctx, deps.HTTPRequest{URL: srv.URL + "/hang", Timeout: 200 * time.Millisecond})
	want := fmt.Sprintf("Get %q: context deadline exceeded (Client.Timeout exceeded while awaiting headers)", srv.URL+"/hang")
	if err == nil || err.Error() != want {
		t.Errorf("error %v; want %q", err, want)
	}

	cctx, ccancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, ccancel)
	_, err = New().HTTPGet(cctx, deps.HTTPRequest{URL: srv.URL + "/hang", Timeout: time.Minute})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: error %v; want context.Canceled", err)
	}
}
