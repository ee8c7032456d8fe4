package fakecri

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// t0 is when every test clock starts.
func t0() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// ns is t0 + d in Unix nanoseconds.
func ns(d time.Duration) int64 { return t0().Add(d).UnixNano() }

// testClock is a single-goroutine virtual clock: Sleep just advances time.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: t0()} }

// Now returns the virtual time.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep advances the virtual time by d.
func (c *testClock) Sleep(d time.Duration) {
	c.Advance(d)
}

// Advance moves the virtual time forward by d.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
}

// Elapsed is the virtual time since t0.
func (c *testClock) Elapsed() time.Duration { return c.Now().Sub(t0()) }

// memFiles keeps files in memory; paths in fail refuse writes.
type memFiles struct {
	mu    sync.Mutex
	files map[string]*bytes.Buffer
	fail  map[string]error
}

func newMemFiles() *memFiles {
	return &memFiles{files: map[string]*bytes.Buffer{}, fail: map[string]error{}}
}

// AppendFile appends to the in-memory file.
func (m *memFiles) AppendFile(path string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fail[path]; err != nil {
		return err
	}
	b := m.files[path]
	if b == nil {
		b = &bytes.Buffer{}
		m.files[path] = b
	}
	b.Write(data)
	return nil
}

// get returns a file's content and whether it exists.
func (m *memFiles) get(path string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[path]
	if !ok {
		return "", false
	}
	return b.String(), true
}

// countFiles only counts what is written (for the fuzzer).
type countFiles struct{ bytes int }

// AppendFile counts data.
func (c *countFiles) AppendFile(path string, data []byte) error {
	c.bytes += len(data)
	return nil
}

// fixture is a runtime on a virtual clock with in-memory files.
type fixture struct {
	t     *testing.T
	r     *Runtime
	clock *testClock
	files *memFiles
	ctx   context.Context
}

// newFixture builds a runtime with the test clock; cfg may be changed by mod.
func newFixture(t *testing.T, mods ...func(*Config)) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: newTestClock(), files: newMemFiles(), ctx: context.Background()}
	cfg := Config{Clock: f.clock, Files: f.files}
	for _, m := range mods {
		m(&cfg)
	}
	f.r = New(cfg)
	return f
}

// podConfig is a kubelet-like sandbox config.
func podConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		Labels:       map[string]string{podUIDLabel: "uid-" + name, "app": name},
		Annotations:  map[string]string{"note": "pod " + name},
		LogDirectory: "/var/log/pods/default_" + name,
	}
}

// ctrConfig is a kubelet-like container config with env "K=V" pairs.
func ctrConfig(name string, env ...string) *runtimeapi.ContainerConfig {
	c := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: name},
		Image:       &runtimeapi.ImageSpec{Image: "busybox"},
		Labels:      map[string]string{"io.kubernetes.container.name": name},
		Annotations: map[string]string{"ann": name},
		LogPath:     name + "/0.log",
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		c.Envs = append(c.Envs, &runtimeapi.KeyValue{Key: k, Value: []byte(v)})
	}
	return c
}

// withLimit sets a container's memory limit.
func withLimit(c *runtimeapi.ContainerConfig, limit int64) *runtimeapi.ContainerConfig {
	c.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: limit}}
	return c
}

// runPod runs a sandbox or fails the test.
func (f *fixture) runPod(name string) string {
	f.t.Helper()
	id, err := f.r.RunPodSandbox(f.ctx, podConfig(name), "")
	if err != nil {
		f.t.Fatalf("RunPodSandbox(%s): %v", name, err)
	}
	return id
}

// create creates a container or fails the test.
func (f *fixture) create(sb string, cfg *runtimeapi.ContainerConfig) string {
	f.t.Helper()
	id, err := f.r.CreateContainer(f.ctx, sb, cfg, nil)
	if err != nil {
		f.t.Fatalf("CreateContainer(%s): %v", cfg.GetMetadata().GetName(), err)
	}
	return id
}

// run creates and starts a container or fails the test.
func (f *fixture) run(sb string, cfg *runtimeapi.ContainerConfig) string {
	f.t.Helper()
	id := f.create(sb, cfg)
	if err := f.r.StartContainer(f.ctx, id); err != nil {
		f.t.Fatalf("StartContainer(%s): %v", cfg.GetMetadata().GetName(), err)
	}
	return id
}

// status returns a container's status or fails the test.
func (f *fixture) status(id string) *runtimeapi.ContainerStatus {
	f.t.Helper()
	resp, err := f.r.ContainerStatus(f.ctx, id, false)
	if err != nil {
		f.t.Fatalf("ContainerStatus(%s): %v", id, err)
	}
	return resp.Status
}

// wantCode fails the test unless err is a status error with code want.
func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Errorf("%s: code %v (err %v), want %v", what, got, err, want)
	}
}

// wantErrContains fails the test unless err's message contains every part.
func wantErrContains(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one containing %q", what, parts)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not contain %q", what, err, p)
		}
	}
}

// exitSummary is a compact view of a container's end, for diffs.
type exitSummary struct {
	State    string
	ExitCode int32
	Reason   string
	Finished time.Duration // since t0()
}

// summarize extracts the exit summary of a status.
func summarize(st *runtimeapi.ContainerStatus) exitSummary {
	s := exitSummary{State: st.State.String(), ExitCode: st.ExitCode, Reason: st.Reason}
	if st.FinishedAt != 0 {
		s.Finished = time.Duration(st.FinishedAt - t0().UnixNano())
	}
	return s
}

// errString renders an error for traces.
func errString(err error) string {
	if err == nil {
		return "ok"
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return fmt.Sprintf("exit %d", ee.Code)
	}
	return status.Code(err).String()
}
