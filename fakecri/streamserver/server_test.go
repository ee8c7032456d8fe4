package streamserver

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
)

func TestRelayLogWritesCompleteLinesByStream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	data := "2026-01-01T00:00:00Z stdout F one\n" +
		"2026-01-01T00:00:01Z stderr F two words\n" +
		"2026-01-01T00:00:02Z stdout F unfinished"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	off := relayLog(path, 0, &out, &errOut, false)
	if out.String() != "one\n" || errOut.String() != "two words\n" {
		t.Errorf("stdout %q stderr %q, want one / two words", out.String(), errOut.String())
	}
	if want := int64(strings.LastIndexByte(data, '\n') + 1); off != want {
		t.Errorf("offset %d, want %d (the unfinished line is kept for later)", off, want)
	}
	out.Reset()
	relayLog(path, 0, &out, nil, true)
	if out.String() != "one\ntwo words\n" {
		t.Errorf("with a TTY both streams go to stdout: %q", out.String())
	}
}

// podWithHTTP runs a sandbox with one container scripted by FAKECRI_HTTP.
func podWithHTTP(t *testing.T, script string) (*fakecri.Runtime, string) {
	t.Helper()
	rt := fakecri.New(fakecri.Config{})
	ctx := context.Background()
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"}}
	sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Envs:     []*runtimeapi.KeyValue{{Key: "FAKECRI_HTTP", Value: []byte(script)}},
	}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return rt, sb
}

func TestPortForwardAnswersTheScriptedEndpoint(t *testing.T) {
	rt, sb := podWithHTTP(t, "80/down=500;80/moved=302>http://elsewhere/")
	ctx := context.Background()
	client, server := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- (&runtime{rt: rt}).PortForward(ctx, sb, 80, server) }()
	br := bufio.NewReader(client)
	for _, tc := range []struct {
		path     string
		code     int
		location string
	}{{"/", 200, ""}, {"/down", 500, ""}, {"/moved", 302, "http://elsewhere/"}} {
		req, _ := http.NewRequest("GET", "http://x"+tc.path, nil)
		if err := req.Write(client); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || resp.Header.Get("Location") != tc.location || !strings.Contains(string(body), "port 80 "+tc.path) {
			t.Errorf("GET %s = %d %q (Location %q), want %d %q", tc.path, resp.StatusCode, body, resp.Header.Get("Location"), tc.code, tc.location)
		}
	}
	client.Close()
	if err := <-done; err != nil {
		t.Errorf("port forward ended with %v after the client closed", err)
	}
}

// A port-forward to a port no container listens on fails, as a dial into
// the pod's network namespace would be refused.
func TestPortForwardToAPortNothingListensOn(t *testing.T) {
	rt, sb := podWithHTTP(t, "80=200")
	ctx := context.Background()
	client, server := net.Pipe()
	defer client.Close()
	err := (&runtime{rt: rt}).PortForward(ctx, sb, 81, server)
	if err == nil || !strings.Contains(err.Error(), "port 81") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("port forward to port 81: %v, want a refused connection", err)
	}
}
