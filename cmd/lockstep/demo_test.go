package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/real/daemon"
)

// freePort returns a TCP port nothing listens on now.
func freePort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// TestDemo runs what `make run` runs — the daemon, standalone, on the fake
// runtime with examples/manifests and its loopback pod network — for a
// bounded time and checks over the read-only port that every pod reaches
// the state its manifest promises, the web pod Ready through its HTTP
// readiness probe over the network, and that the web pod's address
// answers a GET as its FAKECRI_HTTP script says. It is a real-time test of
// the real daemon: it polls, bounded by a deadline.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real daemon for several seconds")
	}
	_, file, _, _ := runtime.Caller(0)
	manifests := filepath.Join(filepath.Dir(file), "..", "..", "examples", "manifests")
	dir := rootDir(t)
	o := daemon.Defaults()
	o.RuntimeEndpoint, o.ManifestPath, o.NodeName = daemon.FakeRuntime, manifests, "demo-node"
	o.Address, o.Port, o.ReadOnlyPort = "127.0.0.1", freePort(t), freePort(t)
	o.HealthzPort = 0 // the host's 10248 may be another node's
	o.RootDir, o.PodLogsRoot, o.ContainerLogsDir = dir, filepath.Join(dir, "pods"), filepath.Join(dir, "containers")
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// A range of its own, apart from other test processes' (make run's is 127.88.0.0/16).
	podNet := fakeNetwork{PodNetwork: fmt.Sprintf("127.%d.252.0/24", 150+os.Getpid()%50)}
	go func() { done <- runNode(ctx, o, podNet, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	}()

	base := fmt.Sprintf("http://127.0.0.1:%d", o.ReadOnlyPort)
	want := map[string]string{
		"web-demo-node":        "Running/httpd:running/ready",
		"crashloop-demo-node":  "Running/app:CrashLoopBackOff",
		"memory-hog-demo-node": "Failed/hog:OOMKilled",
		"batch-job-demo-node":  "Succeeded/work:Completed",
		"with-init-demo-node":  "Running/app:running",
	}
	var got map[string]string
	deadline := time.Now().Add(60 * time.Second)
	for tick := time.NewTicker(250 * time.Millisecond); time.Now().Before(deadline); <-tick.C {
		got = demoStates(base)
		// A crash-looping container shows its last exit while it waits
		// out its back-off, CrashLoopBackOff at the sync that restarts
		// it (the kubelet's status is set at the start of a sync).
		if got["crashloop-demo-node"] == "Running/app:Error" {
			got["crashloop-demo-node"] = "Running/app:CrashLoopBackOff"
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pod states after 60 s:\n got %v\nwant %v", got, want)
	}
	// The web pod's address, from its status, answers as FAKECRI_HTTP says.
	ip := podIP(base, "web-demo-node")
	if !strings.HasPrefix(ip, fmt.Sprintf("127.%d.252.", 150+os.Getpid()%50)) {
		t.Fatalf("web pod IP %q, want one of %s", ip, podNet.PodNetwork)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + ip + ":8080/index.html")
	if err != nil {
		t.Fatalf("GET the web pod: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "200\n" {
		t.Errorf("GET the web pod: %d %q, want 200 %q", resp.StatusCode, body, "200\n")
	}
	for path, wantText := range map[string]string{"/healthz": "ok", "/metrics": "kubelet_running_pods "} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), wantText) {
			t.Errorf("GET %s: %d, want 200 with %q", path, resp.StatusCode, wantText)
		}
	}
}

// podIP reads a pod's IP from /pods.
func podIP(base, name string) string {
	resp, err := http.Get(base + "/pods")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var list corev1.PodList
	if json.NewDecoder(resp.Body).Decode(&list) != nil {
		return ""
	}
	for _, p := range list.Items {
		if p.Name == name {
			return p.Status.PodIP
		}
	}
	return ""
}

// demoStates reads /pods into "phase/container:state" per pod name, with
// "/ready" after a container whose pod has a readiness probe and is Ready.
func demoStates(base string) map[string]string {
	resp, err := http.Get(base + "/pods")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var list corev1.PodList
	if json.NewDecoder(resp.Body).Decode(&list) != nil {
		return nil
	}
	out := map[string]string{}
	for _, p := range list.Items {
		s := string(p.Status.Phase)
		if n := len(p.Status.ContainerStatuses); n > 0 {
			c := p.Status.ContainerStatuses[n-1]
			state := "running"
			switch {
			case c.State.Waiting != nil:
				state = c.State.Waiting.Reason
			case c.State.Terminated != nil:
				state = c.State.Terminated.Reason
			}
			s += "/" + c.Name + ":" + state
			if hasReadinessProbe(&p) && c.Ready {
				s += "/ready"
			}
		}
		out[p.Name] = s
	}
	return out
}

// hasReadinessProbe reports whether one of the pod's containers has a
// readiness probe.
func hasReadinessProbe(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if c.ReadinessProbe != nil {
			return true
		}
	}
	return false
}
