package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/node/real/daemon"
)

const runOnceWeb = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: httpd, image: busybox:1.36, command: [httpd, -f]}
`

const runOnceBroken = `apiVersion: v1
kind: Pod
metadata: {name: broken}
spec:
  restartPolicy: Never
  containers:
  - {name: app, image: busybox:1.36, command: [sh, -c, "exit 3"]}
`

// runOnce runs `lockstep node --runonce` on the fake runtime over a
// manifest directory holding manifests (and the manifest URL url, if
// any), and returns its output and error.
func runOnce(t *testing.T, manifests map[string]string, url ...string) (string, error) {
	t.Helper()
	dir := rootDir(t)
	mdir := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range manifests {
		if err := os.WriteFile(filepath.Join(mdir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := daemon.Defaults()
	o.RuntimeEndpoint, o.ManifestPath, o.NodeName, o.RunOnce = daemon.FakeRuntime, mdir, "once-node", true
	o.RootDir, o.PodLogsRoot, o.ContainerLogsDir = dir, filepath.Join(dir, "pods"), filepath.Join(dir, "containers")
	o.RunOnceTimeout = 30 * time.Second
	if len(url) > 0 {
		o.ManifestURL = url[0]
		o.ManifestURLHeader = map[string][]string{"Authorization": {"Bearer once"}}
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := fakeRuntime(slog.New(slog.NewTextHandler(io.Discard, nil)), &o, fakeNetwork{PodNetwork: "off"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	err = daemon.RunOnce(ctx, o, rt, slog.New(slog.NewTextHandler(io.Discard, nil)), &out)
	return out.String(), err
}

// TestRunOnceStartsAndExits: --runonce starts the static pods with no
// apiserver, prints one line per pod once all run and returns nil.
func TestRunOnceStartsAndExits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real daemon for a few seconds")
	}
	out, err := runOnce(t, map[string]string{"web.yaml": runOnceWeb})
	if err != nil {
		t.Fatalf("runonce: %v\n%s", err, out)
	}
	if want := "pod default/web-once-node: Running, containers httpd=running\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

// TestRunOnceNamesTheFailedPod: a pod that fails makes --runonce fail,
// naming it.
func TestRunOnceNamesTheFailedPod(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real daemon for a few seconds")
	}
	out, err := runOnce(t, map[string]string{"web.yaml": runOnceWeb, "broken.yaml": runOnceBroken})
	if err == nil || !strings.Contains(err.Error(), "runonce: pods failed: default/broken-once-node") {
		t.Fatalf("runonce = %v, want an error naming default/broken-once-node\n%s", err, out)
	}
	if !strings.Contains(out, "pod default/broken-once-node: Failed, containers app=terminated(Error, exit 3)") {
		t.Errorf("output lacks the failed pod's line:\n%s", out)
	}
}

// TestRunOnceFromManifestURL: --runonce takes the pods of --manifest-url
// too, fetched with the header.
func TestRunOnceFromManifestURL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real daemon for a few seconds")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer once" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(strings.Replace(runOnceWeb, "name: web", "name: fetched", 1)))
	}))
	defer srv.Close()
	out, err := runOnce(t, map[string]string{"web.yaml": runOnceWeb}, srv.URL)
	if err != nil {
		t.Fatalf("runonce: %v\n%s", err, out)
	}
	want := "pod default/fetched-once-node: Running, containers httpd=running\npod default/web-once-node: Running, containers httpd=running\n"
	if out != want {
		t.Errorf("output %q, want %q", out, want)
	}
}
