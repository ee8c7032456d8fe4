package cri

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/fakecri/criserver"
)

// testTimeout bounds every test's calls so a bug cannot hang the run.
const testTimeout = 30 * time.Second

// socket returns "unix://<short temp dir>/name" (unix socket paths must
// stay under 108 bytes).
func socket(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	if len(dir)+len(name) > 90 {
		var err error
		if dir, err = os.MkdirTemp("", "cri"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	return "unix://" + filepath.Join(dir, name)
}

// serve serves rt on endpoint over a real unix socket until stop (also
// run at cleanup): event streams end, in-flight calls finish, the socket
// file goes away.
func serve(t *testing.T, endpoint string, rt *fakecri.Runtime, opts ...grpc.ServerOption) (stop func()) {
	t.Helper()
	lis, err := criserver.Listen(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	criserver.Register(srv, rt)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(lis)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			rt.CloseEventStreams()
			srv.GracefulStop()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

// dial dials endpoint and closes the client at cleanup.
func dial(t *testing.T, endpoint string, opts Options) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := Dial(ctx, endpoint, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// testCtx is a context bounded by testTimeout.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// wantCode fails unless err has gRPC code want and its message starts
// with prefix.
func wantCode(t *testing.T, what string, err error, want codes.Code, prefix string) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Errorf("%s: code %v (%v), want %v", what, got, err, want)
		return
	}
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("%s: error %q, want prefix %q", what, err, prefix)
	}
}
