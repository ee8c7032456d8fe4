package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
)

// lockedBuffer is a bytes.Buffer safe for the command's writes and the
// test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPodNetworkOverTheSocket runs the command with --pod-network and
// --host-network-address, creates two pods over its CRI socket as a
// kubelet would, and reaches their scripted endpoints over the network:
// the pod at the loopback address PodSandboxStatus reports, the
// host-network one at the node address.
func TestPodNetworkOverTheSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "fccli")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "cri.sock")
	octet := 150 + os.Getpid()%50 // apart from other test processes' ranges
	podRange, node := fmt.Sprintf("127.%d.250.0/24", octet), fmt.Sprintf("127.%d.251.1", octet)
	cmd := NewCommand()
	var stderr lockedBuffer
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"--listen", "unix://" + sock, "--pod-network", podRange, "--host-network-address", node})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("command: %v", err)
		}
	}()
	waitFor(t, "the CRI socket", func() bool { _, err := os.Stat(sock); return err == nil })

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rs := runtimeapi.NewRuntimeServiceClient(conn)
	run := func(name string, hostNet bool, env string) string {
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: "uid-" + name}}
		if hostNet {
			cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}}
		}
		sb, err := rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		k, v, _ := strings.Cut(env, "=")
		ctr, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: cfg, Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
			Envs: []*runtimeapi.KeyValue{{Key: k, Value: []byte(v)}}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr.ContainerId}); err != nil {
			t.Fatal(err)
		}
		st, err := rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.PodSandboxId})
		if err != nil {
			t.Fatal(err)
		}
		return st.GetStatus().GetNetwork().GetIp()
	}
	ip := run("web", false, "FAKECRI_HTTP=8080/healthz=503")
	if want := fmt.Sprintf("127.%d.250.2", octet); ip != want {
		t.Errorf("sandbox IP %q, want %s, the first of %s", ip, want, podRange)
	}
	if hostIP := run("exporter", true, "FAKECRI_HTTP=9100=204"); hostIP != "" {
		t.Errorf("host-network sandbox IP %q, want none", hostIP)
	}
	for url, want := range map[string]int{
		"http://" + net.JoinHostPort(ip, "8080") + "/healthz":   503,
		"http://" + net.JoinHostPort(ip, "8080") + "/":          200,
		"http://" + net.JoinHostPort(node, "9100") + "/metrics": 204,
	} {
		deadline := time.Now().Add(10 * time.Second)
		for got := statusOf(url); got != fmt.Sprint(want); got = statusOf(url) {
			if time.Now().After(deadline) {
				t.Fatalf("GET %s: %s after 10 s, want %d", url, got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if got := stderr.String(); !strings.Contains(got, "fakecri: pod network "+podRange+" served on loopback (host-network pods: "+node+")") {
		t.Errorf("start lines %q do not say where pods are served", got)
	}
}

// statusOf is a GET's status code, or its error.
func statusOf(url string) string {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return fmt.Sprint(resp.StatusCode)
}

// TestPodNetworkFlags: the flags' values and their errors.
func TestPodNetworkFlags(t *testing.T) {
	for _, tc := range []struct {
		network, host, want, err string
	}{
		{network: "off", want: "invalid Prefix/invalid IP"},
		{network: "loopback", want: "127.88.0.0/16/invalid IP"},
		{network: "loopback", host: "127.0.0.2", want: "127.88.0.0/16/127.0.0.2"},
		{network: "10.0.0.0/8", err: `--pod-network "10.0.0.0/8" --host-network-address "": pod network 10.0.0.0/8: want an IPv4 prefix inside 127.0.0.0/8`},
		{network: "off", host: "127.0.0.2", err: `host-network address "127.0.0.2" needs a pod network`},
		{network: "loopback", host: "node", err: "host-network address: ParseAddr"},
	} {
		var cfg fakecri.Config
		err := setPodNetwork(&cfg, tc.network, tc.host)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q %q: error %v, want one containing %q", tc.network, tc.host, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q %q: %v", tc.network, tc.host, err)
		case tc.err == "" && cfg.LoopbackCIDR.String()+"/"+cfg.NodeAddress.String() != tc.want:
			t.Errorf("%q %q: %s/%s, want %s", tc.network, tc.host, cfg.LoopbackCIDR, cfg.NodeAddress, tc.want)
		}
	}
}

// waitFor polls cond for at most 10 s of wall time: a process's socket
// and its pod network come up on their own goroutines.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: still not after 10 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
