package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/exec"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/fakecri/streamserver"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

// streamFixture is a secure server over a fakecri runtime with a
// streaming server and one running pod default/web (container "app").
type streamFixture struct {
	ts    *httptest.Server
	authz *recordingAuthz
	cfg   *rest.Config
	rt    *fakecri.Runtime
	id    string // the container's ID
}

func newStreamFixture(t *testing.T) *streamFixture {
	t.Helper()
	rt := fakecri.New(fakecri.Config{})
	ss, err := streamserver.Start(rt, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Stop() })
	ctx := context.Background()
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"},
		Labels:       map[string]string{podstate.LabelPodUID: "uid-1"},
		LogDirectory: t.TempDir(),
	}
	sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		LogPath:  "app.log",
		Envs: []*runtimeapi.KeyValue{
			{Key: "FAKECRI_LOG", Value: []byte("tick")},
			{Key: "FAKECRI_LOG_EVERY", Value: []byte("50ms")},
			{Key: "FAKECRI_EXEC", Value: []byte("check=3")},
			{Key: "FAKECRI_HTTP", Value: []byte("8080/healthz=503")},
		},
	}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	p := newProvider(t)
	p.runtime = rt
	p.setPods(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID("uid-1")},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "waiting"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", ContainerID: "containerd://" + id, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "waiting", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
		}},
	})
	authz := &recordingAuthz{}
	s := newServer(t, p, authz)
	ts := httptest.NewTLSServer(s.SecureHandler())
	t.Cleanup(ts.Close)
	return &streamFixture{
		ts: ts, authz: authz, rt: rt, id: id,
		cfg: &rest.Config{Host: ts.URL, BearerToken: testToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true}},
	}
}

// execURL is the kubelet exec URL of cmd in default/web's container.
func (f *streamFixture) execURL(kind, container string, cmd ...string) *url.URL {
	q := url.Values{"output": {"1"}, "error": {"1"}}
	for _, c := range cmd {
		q.Add("command", c)
	}
	u, _ := url.Parse(fmt.Sprintf("%s/%s/default/web/%s?%s", f.ts.URL, kind, container, q.Encode()))
	return u
}

func TestExecOverSPDYAndWebSocket(t *testing.T) {
	f := newStreamFixture(t)
	executors := map[string]func(u *url.URL) (remotecommand.Executor, error){
		"spdy": func(u *url.URL) (remotecommand.Executor, error) {
			return remotecommand.NewSPDYExecutor(f.cfg, "POST", u)
		},
		"websocket": func(u *url.URL) (remotecommand.Executor, error) {
			return remotecommand.NewWebSocketExecutor(f.cfg, "GET", u.String())
		},
	}
	for name, newExec := range executors {
		t.Run(name, func(t *testing.T) {
			ex, err := newExec(f.execURL("exec", "app", "echo", "hello", "world"))
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
				t.Fatalf("exec echo: %v (stderr %q)", err, stderr.String())
			}
			if got := stdout.String(); got != "hello world\n" {
				t.Errorf("exec echo stdout = %q, want %q", got, "hello world\n")
			}

			ex, err = newExec(f.execURL("exec", "app", "check"))
			if err != nil {
				t.Fatal(err)
			}
			err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
			exitErr, ok := err.(exec.ExitError)
			if !ok || exitErr.ExitStatus() != 3 {
				t.Errorf("exec check: %v (%T), want exit code 3", err, err)
			}
		})
	}
	for _, c := range f.authz.recorded() {
		if c.Resource != "nodes" || c.Subresource != "proxy" || c.Name != "node-a" {
			t.Errorf("exec authorized as %+v, want nodes/proxy of node-a", c)
		}
	}
}

// TestAttachRelaysOutputUntilTheContainerStops attaches over SPDY, reads
// the container's output, and sees the stream end when it stops.
func TestAttachRelaysOutputUntilTheContainerStops(t *testing.T) {
	f := newStreamFixture(t)
	ex, err := remotecommand.NewSPDYExecutor(f.cfg, "POST", f.execURL("attach", "app"))
	if err != nil {
		t.Fatal(err)
	}
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: w, Stderr: io.Discard})
		w.Close()
	}()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(r, buf); err != nil || string(buf) != "tick\n" {
		t.Fatalf("first attached output %q %v, want a tick line", buf, err)
	}
	go io.Copy(io.Discard, r)
	if err := f.rt.StopContainer(context.Background(), f.id, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("attach ended with %v, want a clean end when the container stopped", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("attach still open 10 s after the container stopped")
	}
}

func TestStreamErrors(t *testing.T) {
	f := newStreamFixture(t)
	client := f.ts.Client()
	for _, tc := range []struct {
		name, path string
		code       int
		body       string
	}{
		{"no such pod", "/exec/default/nope/app?command=ls&output=1", http.StatusNotFound, "pod default/nope does not exist"},
		{"wrong uid", "/exec/default/web/other-uid/app?command=ls&output=1", http.StatusNotFound, "pod default/web does not exist"},
		{"container not running", "/exec/default/web/waiting?command=ls&output=1", http.StatusNotFound, `container not found ("waiting")`},
		{"no stream", "/exec/default/web/app?command=ls", http.StatusBadRequest, "you must specify at least 1 of stdin, stdout, stderr"},
		{"attach without stream", "/attach/default/web/app", http.StatusBadRequest, "you must specify at least 1 of stdin, stdout, stderr"},
		{"port forward to no pod", "/portForward/default/nope?port=80", http.StatusNotFound, "pod default/nope does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", f.ts.URL+tc.path, nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.body) {
				t.Errorf("POST %s = %d %q, want %d containing %q", tc.path, resp.StatusCode, body, tc.code, tc.body)
			}
		})
	}
}

func TestRunAnswersExecSyncOutput(t *testing.T) {
	f := newStreamFixture(t)
	req, _ := http.NewRequest("POST", f.ts.URL+"/run/default/web/app?cmd=echo+ran+it", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ran it\n" {
		t.Errorf("POST /run = %d %q, want 200 %q", resp.StatusCode, body, "ran it\n")
	}
}

func TestPortForwardOverSPDYAndWebSocket(t *testing.T) {
	f := newStreamFixture(t)
	u, _ := url.Parse(f.ts.URL + "/portForward/default/web")
	for _, name := range []string{"spdy", "websocket"} {
		t.Run(name, func(t *testing.T) {
			transport, upgrader, err := spdy.RoundTripperFor(f.cfg)
			if err != nil {
				t.Fatal(err)
			}
			dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
			if name == "websocket" {
				if dialer, err = portforward.NewSPDYOverWebsocketDialer(u, f.cfg); err != nil {
					t.Fatal(err)
				}
			}
			stop, ready := make(chan struct{}), make(chan struct{})
			var out, errOut bytes.Buffer
			pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, &out, &errOut)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- pf.ForwardPorts() }()
			defer func() { close(stop); <-done }()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("port forward ended: %v (%s)", err, errOut.String())
			case <-time.After(10 * time.Second):
				t.Fatal("port forward not ready after 10s")
			}
			ports, err := pf.GetPorts()
			if err != nil || len(ports) != 1 {
				t.Fatalf("ports %v %v", ports, err)
			}
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[0].Local))
			if err != nil {
				t.Fatalf("GET through the port forward: %v (%s)", err, errOut.String())
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 503 || !strings.Contains(string(body), "port 8080 /healthz: 503") {
				t.Errorf("GET /healthz through the port forward = %d %q, want the scripted 503", resp.StatusCode, body)
			}
		})
	}
}
