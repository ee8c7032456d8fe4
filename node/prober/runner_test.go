package prober

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// fakeNet answers GETs by URL and records them.
type fakeNet struct {
	answers map[string]deps.HTTPResponse
	tcp     map[string]error
	grpc    map[string]string
	grpcErr map[string]error
	sent    []string
}

func (n *fakeNet) HTTPGet(_ context.Context, req deps.HTTPRequest) (deps.HTTPResponse, error) {
	n.sent = append(n.sent, fmt.Sprintf("GET %s host=%q ua=%v", req.URL, req.Host, req.Header["User-Agent"]))
	a, ok := n.answers[req.URL]
	if !ok {
		return deps.HTTPResponse{}, errors.New("connection refused")
	}
	return a, nil
}

func (n *fakeNet) DialTCP(_ context.Context, host string, port int) error {
	return n.tcp[fmt.Sprintf("%s:%d", host, port)]
}

func (n *fakeNet) GRPCHealth(_ context.Context, host string, port int, service string) (string, error) {
	k := fmt.Sprintf("%s:%d/%s", host, port, service)
	if err := n.grpcErr[k]; err != nil {
		return "", err
	}
	st, ok := n.grpc[k]
	if !ok {
		return "", status.Error(codes.Unimplemented, "unknown service grpc.health.v1.Health")
	}
	return st, nil
}

// fakeExec answers ExecSync from a function.
type fakeExec func(cmd []string, timeout time.Duration) ([]byte, error)

func (f fakeExec) ExecSync(_ context.Context, _ string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	out, err := f(cmd, timeout)
	return out, nil, err
}

type exitErr int

func (e exitErr) Error() string   { return fmt.Sprintf("exit %d", int(e)) }
func (e exitErr) ExitStatus() int { return int(e) }

func httpProbe(port intstr.IntOrString, path string, headers ...corev1.HTTPHeader) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: port, Path: path, HTTPHeaders: headers}}}
}

func TestRunnerHandlers(t *testing.T) {
	c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}}
	target := Target{Pod: &corev1.Pod{}, Container: c, ContainerID: "c1", PodIP: "10.0.0.5"}
	svc := "db"
	hop := func(i int) string { return fmt.Sprintf("http://10.0.0.5:8080/r%d", i) }
	loop := map[string]deps.HTTPResponse{}
	for i := 0; i < 20; i++ {
		loop[hop(i)] = deps.HTTPResponse{StatusCode: 302, Location: fmt.Sprintf("/r%d", i+1)}
	}
	for _, tc := range []struct {
		name  string
		probe *corev1.Probe
		net   *fakeNet
		exec  fakeExec
		want  Outcome
		sent  []string
	}{{
		name: "HTTP 200 on a named port", probe: httpProbe(intstr.FromString("web"), "healthz"),
		net:  &fakeNet{answers: map[string]deps.HTTPResponse{"http://10.0.0.5:8080/healthz": {StatusCode: 200, Body: []byte("ok")}}},
		want: Outcome{Result: Success, Output: "ok", Responded: true},
		sent: []string{`GET http://10.0.0.5:8080/healthz host="" ua=[kube-probe/1.37]`},
	}, {
		name: "HTTP 500 fails", probe: httpProbe(intstr.FromInt32(8080), "/"),
		net:  &fakeNet{answers: map[string]deps.HTTPResponse{"http://10.0.0.5:8080/": {StatusCode: 500}}},
		want: Outcome{Result: Failure, Output: "HTTP probe failed with statuscode: 500", Responded: true},
		sent: []string{`GET http://10.0.0.5:8080/ host="" ua=[kube-probe/1.37]`},
	}, {
		name: "HTTP redirect on the same host is followed, Host header kept",
		probe: httpProbe(intstr.FromInt32(8080), "/a", corev1.HTTPHeader{Name: "host", Value: "example.com"},
			corev1.HTTPHeader{Name: "User-Agent", Value: "mine"}),
		net: &fakeNet{answers: map[string]deps.HTTPResponse{
			"http://10.0.0.5:8080/a": {StatusCode: 301, Location: "/b"},
			"http://10.0.0.5:8080/b": {StatusCode: 204},
		}},
		want: Outcome{Result: Success, Responded: true},
		sent: []string{`GET http://10.0.0.5:8080/a host="example.com" ua=[mine]`, `GET http://10.0.0.5:8080/b host="example.com" ua=[mine]`},
	}, {
		name: "HTTP redirect to another host is not followed: success with a warning", probe: httpProbe(intstr.FromInt32(8080), "/a"),
		net: &fakeNet{answers: map[string]deps.HTTPResponse{
			"http://10.0.0.5:8080/a": {StatusCode: 302, Location: "http://elsewhere.example/x", Body: []byte("moved")},
		}},
		want: Outcome{Result: Success, Warning: true, Output: "Probe terminated redirects, Response body: moved", Responded: true},
		sent: []string{`GET http://10.0.0.5:8080/a host="" ua=[kube-probe/1.37]`},
	}, {
		name: "HTTP stops after 10 redirects", probe: httpProbe(intstr.FromInt32(8080), "/r0"),
		net:  &fakeNet{answers: loop},
		want: Outcome{Result: Failure, Output: `Get "http://10.0.0.5:8080/r10": stopped after 10 redirects`, Err: errors.New(`Get "http://10.0.0.5:8080/r10": stopped after 10 redirects`)},
	}, {
		name: "HTTP refused fails", probe: httpProbe(intstr.FromInt32(9999), "/"),
		net:  &fakeNet{},
		want: Outcome{Result: Failure, Output: "connection refused", Err: errors.New("connection refused")},
		sent: []string{`GET http://10.0.0.5:9999/ host="" ua=[kube-probe/1.37]`},
	}, {
		name:  "TCP up",
		probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(5432)}}},
		net:   &fakeNet{tcp: map[string]error{}},
		want:  Outcome{Result: Success},
	}, {
		name:  "TCP down",
		probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(5432)}}},
		net:   &fakeNet{tcp: map[string]error{"10.0.0.5:5432": errors.New("connection refused")}},
		want:  Outcome{Result: Failure, Output: "connection refused"},
	}, {
		name:  "gRPC serving",
		probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: &svc}}},
		net:   &fakeNet{grpc: map[string]string{"10.0.0.5:9090/db": "SERVING"}},
		want:  Outcome{Result: Success, Output: "service healthy"},
	}, {
		name:  "gRPC not serving",
		probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}},
		net:   &fakeNet{grpc: map[string]string{"10.0.0.5:9090/": "NOT_SERVING"}},
		want:  Outcome{Result: Failure, Output: `service unhealthy (responded with "NOT_SERVING")`},
	}, {
		name:  "gRPC without the health service",
		probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}},
		net:   &fakeNet{},
		want: Outcome{Result: Failure,
			Output: "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"},
	}, {
		name:  "gRPC not connected within the timeout (a refused port too: the kubelet dials blocking)",
		probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}},
		net:   &fakeNet{grpcErr: map[string]error{"10.0.0.5:9090/": fmt.Errorf("connect 10.0.0.5:9090: %w", context.DeadlineExceeded)}},
		want:  Outcome{Result: Failure, Output: `timeout: failed to connect service "10.0.0.5:9090" within 1s: context deadline exceeded`},
	}, {
		name:  "gRPC check not finished within the timeout",
		probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}},
		net:   &fakeNet{grpcErr: map[string]error{"10.0.0.5:9090/": status.Error(codes.DeadlineExceeded, "context deadline exceeded")}},
		want:  Outcome{Result: Failure, Output: "timeout: health rpc did not complete within 1s"},
	}, {
		name:  "gRPC check failed otherwise",
		probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}},
		net:   &fakeNet{grpcErr: map[string]error{"10.0.0.5:9090/": status.Error(codes.NotFound, "unknown service")}},
		want:  Outcome{Result: Failure, Output: "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
	}, {
		name:  "exec exit 0",
		probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/ok"}}}},
		exec:  func([]string, time.Duration) ([]byte, error) { return []byte("fine\n"), nil },
		want:  Outcome{Result: Success, Output: "fine\n"},
	}, {
		name:  "exec non-zero exit fails with its output, capped at 10 KiB",
		probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}}},
		exec:  func([]string, time.Duration) ([]byte, error) { return []byte(strings.Repeat("x", 20000)), exitErr(1) },
		want:  Outcome{Result: Failure, Output: strings.Repeat("x", MaxOutput), Err: exitErr(1)},
	}, {
		name:  "exec timeout fails",
		probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "9"}}}},
		exec: func(_ []string, timeout time.Duration) ([]byte, error) {
			return nil, status.Errorf(codes.DeadlineExceeded, "timed out after %s", timeout)
		},
		want: Outcome{Result: Failure, Output: `command timed out: "sleep 9" timed out after 1s`, Err: status.Error(codes.DeadlineExceeded, "timed out after 1s")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Runner{Execer: tc.exec, Clock: clock.New()}
			if tc.net != nil {
				r.Net = tc.net
			}
			got, err := r.Run(context.Background(), tc.probe, time.Second, target)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, errText); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if tc.sent != nil {
				if diff := cmp.Diff(tc.sent, tc.net.sent); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// errText compares errors by their text.
var errText = cmp.Comparer(func(a, b error) bool { return fmt.Sprint(a) == fmt.Sprint(b) })

func TestRunnerErrors(t *testing.T) {
	c := &corev1.Container{Name: "app"}
	target := Target{Pod: &corev1.Pod{}, Container: c, ContainerID: "c1", PodIP: "10.0.0.5"}
	r := &Runner{Net: &fakeNet{}, Clock: clock.New(), Execer: fakeExec(func([]string, time.Duration) ([]byte, error) {
		return nil, status.Error(codes.NotFound, "no such container")
	})}
	for name, p := range map[string]*corev1.Probe{
		"unknown named port": httpProbe(intstr.FromString("web"), "/"),
		"exec runtime error": {ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}},
		"no handler":         {},
		"no pod IP":          {ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}},
	} {
		tg := target
		if name == "no pod IP" {
			tg.PodIP = ""
		}
		if _, err := r.Run(context.Background(), p, time.Second, tg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
