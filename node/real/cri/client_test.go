package cri

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
)

func TestLifecycleThroughClient(t *testing.T) {
	rt := fakecri.New(fakecri.Config{RuntimeName: "fake-one", RuntimeVersion: "1.2.3"})
	ep := socket(t, "cri.sock")
	serve(t, ep, rt)
	c := dial(t, ep, Options{})
	ctx := testCtx(t)

	wantVer := &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fake-one", RuntimeVersion: "1.2.3", RuntimeApiVersion: "v1"}
	if diff := cmp.Diff(wantVer, c.DialVersion(), protocmp.Transform()); diff != "" {
		t.Errorf("DialVersion (-want +got):\n%s", diff)
	}
	if c.Endpoint() != ep || c.ImageEndpoint() != ep {
		t.Errorf("endpoints %q %q, want %q", c.Endpoint(), c.ImageEndpoint(), ep)
	}
	st, err := c.Status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range st.GetStatus().GetConditions() {
		if !cond.Status {
			t.Errorf("runtime condition %s is false", cond.Type)
		}
	}

	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"},
		Labels:       map[string]string{"io.kubernetes.pod.uid": "uid-1"},
		LogDirectory: t.TempDir(),
	}
	sb, err := c.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	sbs, err := c.PodSandboxStatus(ctx, sb, false)
	if err != nil {
		t.Fatal(err)
	}
	if sbs.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY || sbs.Status.Metadata.Name != "web" {
		t.Errorf("sandbox status: %v %v", sbs.Status.State, sbs.Status.Metadata)
	}

	ctrCfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		LogPath:  "app.log",
	}
	id, err := c.CreateContainer(ctx, sb, ctrCfg, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	cs, err := c.ContainerStatus(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if cs.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container state after start: %v", cs.Status.State)
	}
	list, err := c.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sb})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Id != id || list[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("ListContainers = %v, want the running %s", list, id)
	}

	stdout, _, err := c.ExecSync(ctx, id, []string{"echo", "hi"}, time.Second)
	if err != nil || string(stdout) != "hi\n" {
		t.Errorf("ExecSync echo = %q, %v", stdout, err)
	}
	_, _, err = c.ExecSync(ctx, id, []string{"false"}, time.Second)
	var exit *ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 1 || exit.ContainerID != id {
		t.Errorf("ExecSync false = %v, want an *ExitError with status 1", err)
	}
	if _, ok := err.(interface{ ExitStatus() int }); !ok {
		t.Errorf("ExecSync's exit error %T has no ExitStatus method", err)
	}
	// The kubelet's CRI client's words (a failed hook's message shows them).
	if exit != nil {
		if diff := cmp.Diff("command 'false' exited with 1: ", exit.Error()); diff != "" {
			t.Errorf("exit error text (-want +got):\n%s", diff)
		}
	}

	if err := c.StopContainer(ctx, id, 10); err != nil {
		t.Fatal(err)
	}
	cs, err = c.ContainerStatus(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if cs.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || cs.Status.ExitCode != 143 {
		t.Errorf("container after stop: %v exit %d", cs.Status.State, cs.Status.ExitCode)
	}
	if err := c.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, err = c.ContainerStatus(ctx, id, false)
	wantCode(t, "ContainerStatus of a removed container", err, codes.NotFound, `CRI ContainerStatus "`+id+`": rpc error: code = NotFound`)
	if err := c.StopPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if err := c.RemovePodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	sandboxes, err := c.ListPodSandbox(ctx, nil)
	if err != nil || len(sandboxes) != 0 {
		t.Errorf("sandboxes after removal: %v %v", sandboxes, err)
	}

	// Images.
	ref, err := c.PullImage(ctx, &runtimeapi.ImageSpec{Image: "alpine:3"}, nil, sbCfg)
	if err != nil || ref == "" {
		t.Fatalf("PullImage = %q, %v", ref, err)
	}
	is, err := c.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "alpine:3"}, false)
	if err != nil || is.Image == nil || is.Image.Id != ref {
		t.Errorf("ImageStatus after pull = %v, %v; want image %s", is, err, ref)
	}
	imgs, err := c.ListImages(ctx, nil)
	if err != nil || len(imgs) != 4 {
		t.Errorf("ListImages = %d images, %v; want the 3 preloaded and alpine", len(imgs), err)
	}
	if err := c.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: "alpine:3"}); err != nil {
		t.Fatal(err)
	}
	is, err = c.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "alpine:3"}, false)
	if err != nil || is.Image != nil {
		t.Errorf("ImageStatus after removal = %v, %v; want no image", is, err)
	}
	if _, err := c.ImageFsInfo(ctx); err != nil {
		t.Errorf("ImageFsInfo: %v", err)
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	_, err = c.Version(ctx, "v1")
	wantCode(t, "Version after Close", err, codes.Canceled, "CRI Version: ")
}

func TestErrorsKeepTheirCodes(t *testing.T) {
	rt := fakecri.New(fakecri.Config{})
	ep := socket(t, "cri.sock")
	serve(t, ep, rt)
	c := dial(t, ep, Options{})
	ctx := testCtx(t)

	inject := func(method string, code codes.Code) {
		t.Helper()
		if err := rt.InjectError(method, status.Error(code, "injected"), 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name       string
		call       func() error
		wantCode   codes.Code
		wantPrefix string
	}{{
		name:       "unknown container",
		call:       func() error { return c.StartContainer(ctx, "nope") },
		wantCode:   codes.NotFound,
		wantPrefix: `CRI StartContainer "nope": rpc error: code = NotFound`,
	}, {
		name:       "unknown sandbox",
		call:       func() error { _, err := c.PodSandboxStatus(ctx, "gone", false); return err },
		wantCode:   codes.NotFound,
		wantPrefix: `CRI PodSandboxStatus "gone": rpc error: code = NotFound`,
	}, {
		name: "list fails",
		call: func() error {
			inject("ListContainers", codes.Internal)
			_, err := c.ListContainers(ctx, nil)
			return err
		},
		wantCode:   codes.Internal,
		wantPrefix: "CRI ListContainers: rpc error: code = Internal desc = injected",
	}, {
		name: "sandbox refused",
		call: func() error {
			inject("RunPodSandbox", codes.ResourceExhausted)
			_, err := c.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
				Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"},
			}, "")
			return err
		},
		wantCode:   codes.ResourceExhausted,
		wantPrefix: `CRI RunPodSandbox "ns/p": rpc error: code = ResourceExhausted`,
	}, {
		name: "pull fails",
		call: func() error {
			inject("PullImage", codes.Unavailable)
			_, err := c.PullImage(ctx, &runtimeapi.ImageSpec{Image: "x:1"}, nil, nil)
			return err
		},
		wantCode:   codes.Unavailable,
		wantPrefix: `CRI PullImage "x:1": rpc error: code = Unavailable desc = injected`,
	}, {
		name:       "unimplemented",
		call:       func() error { _, err := c.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: "c1"}); return err },
		wantCode:   codes.Unimplemented,
		wantPrefix: `CRI Attach "c1": rpc error: code = Unimplemented`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.name, tc.call(), tc.wantCode, tc.wantPrefix)
		})
	}
}

func TestTimeouts(t *testing.T) {
	rt := fakecri.New(fakecri.Config{PullLatency: 150 * time.Millisecond})
	ep := socket(t, "cri.sock")
	serve(t, ep, rt)
	short := dial(t, ep, Options{RequestTimeout: 50 * time.Millisecond})
	long := dial(t, ep, Options{})
	latency := func(method string, d time.Duration) {
		t.Helper()
		if err := rt.InjectLatency(method, d, d, 1); err != nil {
			t.Fatal(err)
		}
	}

	// The request timeout bounds an ordinary call.
	latency("ListContainers", 300*time.Millisecond)
	start := time.Now()
	_, err := short.ListContainers(context.Background(), nil)
	wantCode(t, "ListContainers slower than the request timeout", err, codes.DeadlineExceeded, "CRI ListContainers: ")
	if took := time.Since(start); took >= 250*time.Millisecond {
		t.Errorf("ListContainers gave up after %s, want about the 50ms request timeout", took)
	}

	// An earlier deadline of the caller's wins over the 2 min default.
	latency("Status", 300*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = long.Status(ctx, false)
	wantCode(t, "Status past the caller's deadline", err, codes.DeadlineExceeded, "CRI Status: ")

	// PullImage is not bounded by the request timeout.
	ctx = testCtx(t)
	if _, err := short.PullImage(ctx, &runtimeapi.ImageSpec{Image: "slow:1"}, nil, nil); err != nil {
		t.Errorf("PullImage taking longer than the request timeout: %v", err)
	}

	// ExecSync gets its own timeout on top of the request timeout.
	sb, err := short.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"},
		LogDirectory: t.TempDir(),
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := short.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := short.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	latency("ExecSync", 150*time.Millisecond)
	if _, _, err := short.ExecSync(ctx, id, []string{"true"}, time.Second); err != nil {
		t.Errorf("ExecSync within its own 1s timeout: %v", err)
	}
}

func TestReconnectAfterRuntimeRestart(t *testing.T) {
	ep := socket(t, "cri.sock")
	stop := serve(t, ep, fakecri.New(fakecri.Config{RuntimeVersion: "1.0.0"}))
	c := dial(t, ep, Options{})
	ctx := testCtx(t)
	if _, err := c.Version(ctx, "v1"); err != nil {
		t.Fatal(err)
	}

	stop() // the runtime goes away, its socket too
	start := time.Now()
	_, err := c.Version(ctx, "v1")
	wantCode(t, "Version while the runtime is down", err, codes.Unavailable, "CRI Version: ")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a call to a stopped runtime took %s, want a fast failure", took)
	}

	// A new runtime on the same path is found without a new Client (the
	// connection's reconnection backoff is at most 3 s).
	serve(t, ep, fakecri.New(fakecri.Config{RuntimeVersion: "2.0.0"}))
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := c.Version(ctx, "v1")
		if err == nil {
			if v.RuntimeVersion != "2.0.0" {
				t.Errorf("after the restart Version answers %q, want the new runtime's 2.0.0", v.RuntimeVersion)
			}
			break
		}
		if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
			t.Fatalf("runtime restarted on the same socket is not reachable again: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := c.ListPodSandbox(ctx, nil); err != nil {
		t.Errorf("ListPodSandbox after reconnection: %v", err)
	}
}

// versionServer answers Version with a fixed API version and nothing else.
type versionServer struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	apiVersion string
}

func (s versionServer) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "oldrt", RuntimeVersion: "0.9", RuntimeApiVersion: s.apiVersion}, nil
}

// serveGRPC serves srv's registrations on endpoint until cleanup.
func serveGRPC(t *testing.T, endpoint string, register func(*grpc.Server)) {
	t.Helper()
	path, err := SocketPath(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	register(srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
}

func TestDialFailures(t *testing.T) {
	good := socket(t, "good.sock")
	serve(t, good, fakecri.New(fakecri.Config{}))
	missing := socket(t, "missing.sock")
	bare := socket(t, "bare.sock")
	serveGRPC(t, bare, func(*grpc.Server) {})
	old := socket(t, "old.sock")
	serveGRPC(t, old, func(s *grpc.Server) {
		runtimeapi.RegisterRuntimeServiceServer(s, versionServer{apiVersion: "v1alpha2"})
	})

	for _, tc := range []struct {
		name     string
		endpoint string
		opts     Options
		want     string // prefix of the error
	}{{
		name:     "missing socket",
		endpoint: missing,
		want:     "container runtime at " + missing + " is not reachable: rpc error: code = Unavailable",
	}, {
		name:     "missing socket as a bare path",
		endpoint: strings.TrimPrefix(missing, "unix://"),
		want:     "container runtime at " + strings.TrimPrefix(missing, "unix://") + " is not reachable: ",
	}, {
		name:     "not a CRI server",
		endpoint: bare,
		want:     "container runtime at " + bare + " does not speak CRI v1: rpc error: code = Unimplemented",
	}, {
		name:     "old API version",
		endpoint: old,
		want:     "container runtime at " + old + ` does not speak CRI v1: it answers API version "v1alpha2" (oldrt 0.9)`,
	}, {
		name:     "image service missing",
		endpoint: good,
		opts:     Options{ImageEndpoint: missing},
		want:     "image service at " + missing + " is not reachable: rpc error: code = Unavailable",
	}, {
		name:     "image endpoint malformed",
		endpoint: good,
		opts:     Options{ImageEndpoint: "localhost:1"},
		want:     `image service endpoint "localhost:1": socket path is not absolute; want unix:///path/to/socket`,
	}, {
		name:     "tcp",
		endpoint: "tcp://127.0.0.1:10010",
		want:     `container runtime endpoint "tcp://127.0.0.1:10010": unsupported scheme; want unix:///path/to/socket`,
	}, {
		name:     "relative",
		endpoint: "unix://run/containerd.sock",
		want:     `container runtime endpoint "unix://run/containerd.sock": socket path is not absolute; want unix:///path/to/socket`,
	}, {
		name:     "empty",
		endpoint: "",
		want:     `container runtime endpoint "": empty; want unix:///path/to/socket`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.ConnectTimeout = time.Minute // failures must not wait for it
			start := time.Now()
			c, err := Dial(testCtx(t), tc.endpoint, tc.opts)
			if err == nil {
				c.Close(context.Background())
				t.Fatalf("Dial succeeded, want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Dial error:\n got %q\nwant prefix %q", err, tc.want)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("Dial took %s to fail, want a fast failure", took)
			}
		})
	}

	// A bare path works like unix://.
	c := dial(t, strings.TrimPrefix(good, "unix://"), Options{})
	if _, err := c.Version(testCtx(t), "v1"); err != nil {
		t.Errorf("Version through a bare socket path: %v", err)
	}
}

func TestSeparateImageEndpoint(t *testing.T) {
	rtEP, imgEP := socket(t, "rt.sock"), socket(t, "img.sock")
	serve(t, rtEP, fakecri.New(fakecri.Config{RuntimeName: "runtime-side"}))
	serve(t, imgEP, fakecri.New(fakecri.Config{Images: []fakecri.Image{{Ref: "only-here:1", Size: 1}}}))
	c := dial(t, rtEP, Options{ImageEndpoint: imgEP})
	ctx := testCtx(t)
	if c.ImageEndpoint() != imgEP {
		t.Errorf("ImageEndpoint() = %q, want %q", c.ImageEndpoint(), imgEP)
	}
	imgs, err := c.ListImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, img := range imgs {
		refs = append(refs, img.RepoTags...)
	}
	if diff := cmp.Diff([]string{"docker.io/library/only-here:1"}, refs); diff != "" {
		t.Errorf("images come from the image endpoint (-want +got):\n%s", diff)
	}
	v, err := c.Version(ctx, "v1")
	if err != nil || v.RuntimeName != "runtime-side" {
		t.Errorf("Version = %v, %v; want the runtime endpoint's", v, err)
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestSocketPath(t *testing.T) {
	for _, tc := range []struct {
		endpoint, want string
		wantErr        bool
	}{
		{endpoint: "unix:///run/containerd/containerd.sock", want: "/run/containerd/containerd.sock"},
		{endpoint: "/run/crio/crio.sock", want: "/run/crio/crio.sock"},
		{endpoint: "unix:///run//x/../y.sock", want: "/run/y.sock"},
		{endpoint: "unix://", wantErr: true},
		{endpoint: "npipe:////./pipe/containerd", wantErr: true},
		{endpoint: "run/x.sock", wantErr: true},
	} {
		got, err := SocketPath(tc.endpoint)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("SocketPath(%q) = %q, %v; want %q, error %v", tc.endpoint, got, err, tc.want, tc.wantErr)
		}
	}
}
