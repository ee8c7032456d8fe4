package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/real/world"
	"github.com/lockstep-dev/lockstep/node/stats"
)

// fakeProvider is a Provider whose answers the test sets.
type fakeProvider struct {
	mu       sync.Mutex
	pods     []*corev1.Pod
	health   error
	runtime  cri.RuntimeService
	machine  deps.Machine
	node     string
	logsRoot string
}

func (p *fakeProvider) Pods() []*corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*corev1.Pod, len(p.pods))
	for i, pod := range p.pods {
		out[i] = pod.DeepCopy()
	}
	return out
}

func (p *fakeProvider) Healthy() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.health
}

func (p *fakeProvider) Runtime() cri.RuntimeService { return p.runtime }

// Stats takes a fresh sample of the runtime and machine, on the real
// clock.
func (p *fakeProvider) Stats(ctx context.Context) (stats.Sample, error) {
	core := deps.Core{Clock: world.Clock(), Rand: world.NewRand(), Tasks: world.Tasks{}}
	return stats.New(core, stats.Ports{Runtime: p.runtime, Machine: p.machine}, stats.Config{}).Refresh(ctx)
}

func (p *fakeProvider) NodeName() string    { return p.node }
func (p *fakeProvider) PodLogsRoot() string { return p.logsRoot }

// setPods replaces the pods.
func (p *fakeProvider) setPods(pods ...*corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods = pods
}

// setHealth sets what Healthy answers.
func (p *fakeProvider) setHealth(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.health = err
}

// fakeMachine answers fixed info and usage, or err.
type fakeMachine struct {
	info  deps.MachineInfo
	usage deps.MachineUsage
	err   error
}

func (m fakeMachine) Info(context.Context) (deps.MachineInfo, error)   { return m.info, m.err }
func (m fakeMachine) Usage(context.Context) (deps.MachineUsage, error) { return m.usage, m.err }

// newProvider returns a provider for node-a with an empty fake runtime and
// a logs root in a temporary directory.
func newProvider(t *testing.T) *fakeProvider {
	t.Helper()
	return &fakeProvider{
		runtime: fakecri.New(fakecri.Config{}),
		machine: fakeMachine{
			info:  deps.MachineInfo{CPUs: 2, MemoryBytes: 4 << 30, MaxPIDs: 1000},
			usage: deps.MachineUsage{MemoryAvailableBytes: 3 << 30, NodeFSCapacityBytes: 10 << 30, NodeFSAvailableBytes: 4 << 30, NodeFSInodes: 100, NodeFSInodesFree: 40, PIDsAvailable: 900},
		},
		node:     "node-a",
		logsRoot: t.TempDir(),
	}
}

// staticAuth authenticates the tokens it lists.
type staticAuth map[string][]string // token → user, groups...

func (a staticAuth) AuthenticateToken(_ context.Context, token string) (string, []string, bool, error) {
	if token == "explode" {
		return "", nil, false, errors.New("apiserver unreachable")
	}
	v, ok := a[token]
	if !ok {
		return "", nil, false, nil
	}
	return v[0], v[1:], true, nil
}

// sarCall is one recorded authorization question.
type sarCall struct {
	User        string
	Groups      []string
	Verb        string
	Resource    string
	Subresource string
	Name        string
}

// recordingAuthz records every question and answers with decide.
type recordingAuthz struct {
	mu     sync.Mutex
	calls  []sarCall
	decide func(sarCall) (bool, error)
}

func (a *recordingAuthz) Authorize(_ context.Context, user string, groups []string, verb, resource, subresource, name string) (bool, string, error) {
	c := sarCall{user, groups, verb, resource, subresource, name}
	a.mu.Lock()
	a.calls = append(a.calls, c)
	a.mu.Unlock()
	if a.decide == nil {
		return true, "", nil
	}
	ok, err := a.decide(c)
	return ok, "test decision", err
}

func (a *recordingAuthz) recorded() []sarCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]sarCall(nil), a.calls...)
}

// testToken is the token staticAuth knows as alice in group devs.
const testToken = "good-token"

// newServer makes a server for p with a self-signed certificate in a
// temporary directory, token auth for testToken and authz.
func newServer(t *testing.T, p Provider, authz Authorizer, mutate ...func(*Config)) *Server {
	t.Helper()
	cfg := Config{
		CertDir:       t.TempDir(),
		Authenticator: staticAuth{testToken: {"alice", "devs"}},
		Authorizer:    authz,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := New(p, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// get runs a GET through h and returns the status and body.
func get(t *testing.T, h http.Handler, target, token string) (int, string) {
	t.Helper()
	return do(t, h, http.MethodGet, target, token)
}

// do runs one request through h.
func do(t *testing.T, h http.Handler, method, target, token string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// logPod is a pod with one container "app" whose status says instance
// restartCount is running.
func logPod(restartCount int32) *corev1.Pod {
	var last corev1.ContainerState
	if restartCount > 0 {
		last.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, ContainerID: fmt.Sprintf("containerd://app-%d", restartCount-1)}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID("uid-1")},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}, InitContainers: []corev1.Container{{Name: "init"}}},
		Status: corev1.PodStatus{
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", RestartCount: restartCount, ContainerID: fmt.Sprintf("containerd://app-%d", restartCount),
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: last,
			}},
		},
	}
}

// logPath is the log file of instance n of container in logPod.
func logPath(p *fakeProvider, container string, n int) string {
	return filepath.Join(p.logsRoot, "default_web_uid-1", container, strconv.Itoa(n)+".log")
}

// writeLog writes lines (joined with newlines, plus a final one) to path.
func writeLog(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	data := ""
	if len(lines) > 0 {
		data = strings.Join(lines, "\n") + "\n"
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// appendLog appends lines to path.
func appendLog(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
}
