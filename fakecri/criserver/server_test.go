package criserver

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
)

// socketDir returns a short temporary directory (unix socket paths are
// limited to 107 bytes).
func socketDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if len(dir) > 80 {
		var err error
		if dir, err = os.MkdirTemp("", "fc"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	return dir
}

// serve starts rt on a fresh socket; stop shuts it down and reports
// Serve's error.
func serve(t *testing.T, rt *fakecri.Runtime) (endpoint string, stop func() error) {
	t.Helper()
	endpoint = "unix://" + filepath.Join(socketDir(t), "cri.sock")
	lis, err := Listen(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, lis, rt, 5*time.Second) }()
	return endpoint, func() error {
		cancel()
		return <-done
	}
}

// dial connects a CRI client to endpoint.
func dial(t *testing.T, endpoint string) (runtimeapi.RuntimeServiceClient, runtimeapi.ImageServiceClient) {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
}

func TestLifecycleOverSocket(t *testing.T) {
	logDir := t.TempDir()
	rt := fakecri.New(fakecri.Config{})
	endpoint, stop := serve(t, rt)
	rc, ic := dial(t, endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ver, err := rc.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if ver.RuntimeName != "fakecri" || ver.RuntimeApiVersion != "v1" {
		t.Errorf("Version = %v", ver)
	}
	events, err := rc.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := events.Header(); err != nil { // subscribed from here on
		t.Fatal(err)
	}

	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"},
		LogDirectory: logDir,
	}
	run, err := rc.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		t.Fatal(err)
	}
	sb := run.PodSandboxId
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: "nginx"},
		LogPath:  "app.log",
		Envs: []*runtimeapi.KeyValue{
			{Key: "FAKECRI_EXEC", Value: []byte("check=3")},
			{Key: "FAKECRI_LOG", Value: []byte("started")},
		},
	}
	created, err := rc.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: cfg, SandboxConfig: sbCfg})
	if err != nil {
		t.Fatal(err)
	}
	id := created.ContainerId
	if _, err := rc.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	st, err := rc.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.Status.Image.Image != "docker.io/library/nginx:latest" {
		t.Errorf("status after start: %v %v", st.Status.State, st.Status.Image)
	}
	log, err := os.ReadFile(filepath.Join(logDir, "app.log"))
	if err != nil || !strings.HasSuffix(string(log), " stdout F started\n") {
		t.Errorf("log file: %q %v", log, err)
	}

	for _, tc := range []struct {
		cmd  []string
		want *runtimeapi.ExecSyncResponse
	}{
		{[]string{"echo", "hi"}, &runtimeapi.ExecSyncResponse{Stdout: []byte("hi\n")}},
		{[]string{"check"}, &runtimeapi.ExecSyncResponse{ExitCode: 3}},
	} {
		got, err := rc.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: tc.cmd, Timeout: 1})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
			t.Errorf("ExecSync %v (-want +got):\n%s", tc.cmd, diff)
		}
	}

	if _, err := rc.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10}); err != nil {
		t.Fatal(err)
	}
	st, err = rc.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Status.ExitCode != 143 || st.Status.Reason != "Error" {
		t.Errorf("status after stop: %v %d %q", st.Status.State, st.Status.ExitCode, st.Status.Reason)
	}
	if _, err := rc.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	_, err = rc.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if status.Code(err) != codes.NotFound {
		t.Errorf("status of removed container over gRPC: %v, want NotFound", err)
	}
	if _, err := rc.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	list, err := rc.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("sandboxes after removal: %v %v", list, err)
	}

	imgs, err := ic.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil || len(imgs.Images) != 3 {
		t.Errorf("ListImages: %v %v", imgs, err)
	}
	if _, err := ic.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{}); err != nil {
		t.Errorf("ImageFsInfo: %v", err)
	}
	_, err = rc.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("Attach: %v, want Unimplemented", err)
	}

	var got []string
	for range 8 {
		ev, err := events.Recv()
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		who := "ctr"
		if ev.ContainerId == sb {
			who = "pod"
		}
		got = append(got, who+" "+ev.ContainerEventType.String())
	}
	want := []string{
		"pod CONTAINER_CREATED_EVENT", "pod CONTAINER_STARTED_EVENT",
		"ctr CONTAINER_CREATED_EVENT", "ctr CONTAINER_STARTED_EVENT",
		"ctr CONTAINER_STOPPED_EVENT", "ctr CONTAINER_DELETED_EVENT",
		"pod CONTAINER_STOPPED_EVENT", "pod CONTAINER_DELETED_EVENT",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	if err := stop(); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := events.Recv(); err == nil {
		t.Errorf("event stream still open after shutdown")
	}
	path, _ := SocketPath(endpoint)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket %s left behind after shutdown: %v", path, err)
	}
}

func TestEventsOffOverSocket(t *testing.T) {
	endpoint, stop := serve(t, fakecri.New(fakecri.Config{NoEvents: true}))
	defer stop()
	rc, _ := dial(t, endpoint)
	stream, err := rc.GetContainerEvents(context.Background(), &runtimeapi.GetEventsRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("GetContainerEvents with events off: %v, want Unimplemented", err)
	}
}

func TestListen(t *testing.T) {
	dir := socketDir(t)

	// A stale socket (its server died without removing it) is replaced.
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	lis, err := Listen("unix://" + stale)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}

	// A live socket and a regular file are refused, with one clear line.
	_, err = Listen("unix://" + stale)
	wantErr(t, err, "fakecri: listen on unix://"+stale+": another server is listening")
	lis.Close()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Listen("unix://" + file)
	wantErr(t, err, "fakecri: listen on unix://"+file+": "+file+" exists and is not a socket")
	_, err = Listen("unix://" + dir + "/missing/x.sock")
	wantErr(t, err, "fakecri: listen on unix://"+dir+"/missing/x.sock: bind: no such file or directory")
	_, err = Listen("tcp://localhost:1")
	wantErr(t, err, "fakecri: listen on tcp://localhost:1: want unix:///path/to/socket")
}

// wantErr checks an error's exact, single-line message.
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("no error, want %q", want)
		return
	}
	if !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q, want %q", err, want)
	}
}
