package cri

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// streamEnds reports the full method name of every server stream whose
// handler has returned.
func streamEnds() (grpc.ServerOption, chan string) {
	ended := make(chan string, 16)
	return grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		err := handler(srv, ss)
		ended <- info.FullMethod
		return err
	}), ended
}

// runPod starts a sandbox with one running container through c.
func runPod(t *testing.T, ctx context.Context, c *Client) (sandboxID, containerID string) {
	t.Helper()
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "uid-e"},
		LogDirectory: t.TempDir(),
	}
	sb, err := c.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
	}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return sb, id
}

// describe is "<id> <event type>".
func describe(ev *runtimeapi.ContainerEventResponse) string {
	return ev.ContainerId + " " + ev.ContainerEventType.String()
}

func TestEventSource(t *testing.T) {
	ep := socket(t, "cri.sock")
	opt, ended := streamEnds()
	serve(t, ep, fakecri.New(fakecri.Config{}), opt)
	// A long handshake: Subscribe must return on the runtime's headers.
	c := dial(t, ep, Options{EventHandshake: time.Minute})
	var src deps.ContainerEvents = c.EventSource()

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	start := time.Now()
	stream, err := src.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Subscribe took %s: it waited out the handshake instead of the runtime's headers", took)
	}

	// Events of calls made right after Subscribe are all delivered.
	sb, id := runPod(t, ctx, c)
	var got []string
	for range 4 {
		ev, err := stream.Next(ctx)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		got = append(got, describe(ev))
	}
	want := []string{
		sb + " CONTAINER_CREATED_EVENT", sb + " CONTAINER_STARTED_EVENT",
		id + " CONTAINER_CREATED_EVENT", id + " CONTAINER_STARTED_EVENT",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// Ending ctx ends a waiting Next and closes the stream on the server.
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	_, err = stream.Next(ctx)
	wantCode(t, "Next after ctx ended", err, codes.Canceled, "CRI GetContainerEvents: ")
	select {
	case m := <-ended:
		if m != "/runtime.v1.RuntimeService/GetContainerEvents" {
			t.Errorf("stream that ended: %s", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's GetContainerEvents stream is still open after ctx ended")
	}
	_, err = stream.Next(testCtx(t))
	wantCode(t, "Next on an ended stream", err, codes.Canceled, "CRI GetContainerEvents: ")
}

func TestNextDeadlineClosesStream(t *testing.T) {
	ep := socket(t, "cri.sock")
	opt, ended := streamEnds()
	serve(t, ep, fakecri.New(fakecri.Config{}), opt)
	c := dial(t, ep, Options{})
	stream, err := c.EventSource().Subscribe(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = stream.Next(ctx) // no event comes
	wantCode(t, "Next past its ctx's deadline", err, codes.DeadlineExceeded, "CRI GetContainerEvents: ")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Next returned %s after its 30ms deadline", took)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's stream is still open after Next's ctx ended")
	}
}

func TestEventSourceClosesStreamWhenSubscribeCtxEnds(t *testing.T) {
	ep := socket(t, "cri.sock")
	opt, ended := streamEnds()
	serve(t, ep, fakecri.New(fakecri.Config{}), opt)
	c := dial(t, ep, Options{})
	ctx, cancel := context.WithCancel(testCtx(t))
	if _, err := c.EventSource().Subscribe(ctx); err != nil {
		t.Fatal(err)
	}
	cancel() // nobody calls Next: the stream must close anyway
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's GetContainerEvents stream is still open after the subscription's ctx ended")
	}
}

func TestEventSourceWithoutEvents(t *testing.T) {
	// fakecri with NoEvents confirms the stream, then fails it; containerd
	// 1.6 (no GetContainerEvents at all) fails it at once. Either way the
	// PLEG sees Unimplemented, from Subscribe or from the first Next.
	fake := socket(t, "fake.sock")
	serve(t, fake, fakecri.New(fakecri.Config{NoEvents: true}))
	old := socket(t, "old.sock")
	serveGRPC(t, old, func(s *grpc.Server) {
		runtimeapi.RegisterRuntimeServiceServer(s, versionServer{apiVersion: "v1"})
	})
	for _, tc := range []struct {
		name, endpoint string
		failsSubscribe bool
	}{
		{name: "fakecri NoEvents", endpoint: fake},
		{name: "containerd 1.6", endpoint: old, failsSubscribe: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, tc.endpoint, Options{EventHandshake: time.Minute})
			ctx := testCtx(t)
			start := time.Now()
			stream, err := c.EventSource().Subscribe(ctx)
			if (err != nil) != tc.failsSubscribe {
				t.Errorf("Subscribe error %v, want one: %v", err, tc.failsSubscribe)
			}
			if err == nil {
				_, err = stream.Next(ctx)
			}
			wantCode(t, "events from a runtime without them", err, codes.Unimplemented,
				"CRI GetContainerEvents: rpc error: code = Unimplemented")
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %s to fail", took)
			}
		})
	}
}

func TestEventStreamEndsWhenRuntimeStops(t *testing.T) {
	ep := socket(t, "cri.sock")
	stop := serve(t, ep, fakecri.New(fakecri.Config{}))
	c := dial(t, ep, Options{})
	ctx := testCtx(t)
	stream, err := c.EventSource().Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	_, err = stream.Next(ctx)
	wantCode(t, "Next after the runtime stopped", err, codes.Unavailable, "CRI GetContainerEvents: ")
	_, err = c.EventSource().Subscribe(ctx)
	wantCode(t, "Subscribe while the runtime is down", err, codes.Unavailable, "CRI GetContainerEvents: ")
}

// lateHeaderServer sends no response headers before its first event, like
// containerd: it sends one event when release is closed.
type lateHeaderServer struct {
	versionServer
	release chan struct{}
}

func (s lateHeaderServer) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	select {
	case <-s.release:
	case <-stream.Context().Done():
		return nil
	}
	if err := stream.Send(&runtimeapi.ContainerEventResponse{ContainerId: "c1", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func TestEventSourceWithoutEarlyHeaders(t *testing.T) {
	ep := socket(t, "late.sock")
	release := make(chan struct{})
	serveGRPC(t, ep, func(s *grpc.Server) {
		runtimeapi.RegisterRuntimeServiceServer(s, lateHeaderServer{versionServer{apiVersion: "v1"}, release})
	})
	c := dial(t, ep, Options{EventHandshake: 50 * time.Millisecond})
	ctx := testCtx(t)
	stream, err := c.EventSource().Subscribe(ctx) // returns after the handshake wait
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	ev, err := stream.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(ev); got != "c1 CONTAINER_STARTED_EVENT" {
		t.Errorf("event = %s", got)
	}
}

func TestGetContainerEventsChannel(t *testing.T) {
	ep := socket(t, "cri.sock")
	serve(t, ep, fakecri.New(fakecri.Config{}))
	c := dial(t, ep, Options{})
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()

	events := make(chan *runtimeapi.ContainerEventResponse, 8)
	established := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- c.GetContainerEvents(ctx, events, func(s runtimeapi.RuntimeService_GetContainerEventsClient) {
			s.Header() // the runtime has subscribed us
			close(established)
		})
	}()
	<-established
	sb, _ := runPod(t, ctx, c)
	if got, want := describe(<-events), sb+" CONTAINER_CREATED_EVENT"; got != want {
		t.Errorf("first event %q, want %q", got, want)
	}
	cancel()
	wantCode(t, "GetContainerEvents after ctx ended", <-done, codes.Canceled, "CRI GetContainerEvents: ")
}
