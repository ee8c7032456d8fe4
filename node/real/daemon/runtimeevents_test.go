package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/fakecri/criserver"
)

// TestRuntimeEventsOption: by default the daemon takes the runtime's
// container events (the evented PLEG); --runtime-events=false leaves
// them out, so the PLEG relists every second as the kubelet does with
// EventedPLEG off.
func TestRuntimeEventsOption(t *testing.T) {
	dir, err := os.MkdirTemp("", "rtev")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "cri.sock")
	lis, err := criserver.Listen(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rt := fakecri.New(fakecri.Config{})
	srv := grpc.NewServer()
	criserver.Register(srv, rt)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	t.Cleanup(func() { rt.CloseEventStreams(); srv.GracefulStop(); <-done })

	if !Defaults().RuntimeEvents {
		t.Fatal("the default must take the runtime's events")
	}
	for _, events := range []bool{true, false} {
		o := Defaults()
		o.RuntimeEndpoint, o.RuntimeEvents = endpoint, events
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := DialRuntime(ctx, o)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Events != nil; got != events {
			t.Errorf("RuntimeEvents %v: event source present = %v", events, got)
		}
		r.Close()
	}
}
