//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/real/mounter/mountertest"
)

// staticManifest is a busybox static pod manifest.
func staticManifest(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: c
    image: %s
    imagePullPolicy: Never
    command: [sh, -c, %q]
`, name, busybox, sleeper)
}

// manifestServer serves a body on the host's loopback to requests that
// carry the expected Authorization header (401 otherwise).
type manifestServer struct {
	mu     sync.Mutex
	body   string
	hits   int
	denied int
	url    string
}

func startManifestServer(t *testing.T, token string) *manifestServer {
	t.Helper()
	s := &manifestServer{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+token {
			s.denied++
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		s.hits++
		w.Write([]byte(s.body))
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	s.url = "http://" + l.Addr().String() + "/node/manifests"
	return s
}

func (s *manifestServer) set(body string) {
	s.mu.Lock()
	s.body = body
	s.mu.Unlock()
}

func (s *manifestServer) counts() (hits, denied int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits, s.denied
}

// TestManifestURLStaticPods: with --manifest-url and a header the node
// fetches a PodList of two static pods every --http-check-frequency, runs
// them with their mirror pods, and stops the one the server stops serving.
func TestManifestURLStaticPods(t *testing.T) {
	e := setup(t)
	srv := startManifestServer(t, "e2e-secret")
	a, b := "url-a", "url-b"
	list := func(names ...string) string {
		var items []string
		for _, n := range names {
			items = append(items, strings.ReplaceAll(strings.TrimPrefix(staticManifest(n), "apiVersion: v1\nkind: Pod\n"), "\n", "\n  "))
		}
		return "apiVersion: v1\nkind: PodList\nitems:\n- " + strings.Join(items, "\n- ") + "\n"
	}
	srv.set(list(a, b))
	e.withLockstepArgs(t, "--manifest-url="+srv.url, "--manifest-url-header=Authorization:Bearer e2e-secret", "--http-check-frequency=2s")
	t.Cleanup(func() { srv.set("") }) // before the restart without the flag
	mirrors := map[string]*corev1.Pod{}
	for _, n := range []string{a, b} {
		mirrors[n] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n + "-" + e.node, Namespace: "default"}}
		got := e.waitPod(t, mirrors[n], 90*time.Second, "mirror of the URL's pod Running and Ready", podReady)
		if src := got.Annotations["kubernetes.io/config.source"]; src != "http" {
			t.Errorf("mirror %s: config.source %q, want http", got.Name, src)
		}
	}
	if hits, denied := srv.counts(); hits == 0 || denied != 0 {
		t.Errorf("server: %d authorized fetches, %d denied; want every fetch with the header", hits, denied)
	}
	start, _ := srv.counts()
	began := time.Now()
	poll(t, 15*time.Second, "two more fetches of the manifest URL", func() (bool, error) {
		hits, _ := srv.counts()
		return hits-start >= 2, fmt.Errorf("%d fetches", hits-start)
	})
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("two fetches took %v with --http-check-frequency=2s, want at most 5 s", took.Round(time.Millisecond))
	}
	srv.set(list(a))
	e.waitGone(t, mirrors[b], 60*time.Second)
	if got := e.get(t, mirrors[a]); got == nil || !podReady(got) {
		t.Errorf("pod %s, still served, is not Ready any more", mirrors[a].Name)
	}
	srv.set("")
	e.waitGone(t, mirrors[a], 60*time.Second)
}

// TestGracefulShutdownInactiveWithoutSystemd: these machines have no
// systemd as PID 1; with a shutdown grace period lockstep says graceful
// node shutdown is inactive, and runs normally.
func TestGracefulShutdownInactiveWithoutSystemd(t *testing.T) {
	e := setup(t)
	if fi, err := os.Stat("/run/systemd/system"); err == nil && fi.IsDir() {
		t.Skip("this machine runs systemd: logind would take the lock")
	}
	logPath := filepath.Join(e.dir, "logs", "lockstep.log")
	before, _ := os.ReadFile(logPath)
	e.withLockstepArgs(t, "--shutdown-grace-period=20s", "--shutdown-grace-period-critical-pods=5s")
	poll(t, 20*time.Second, "the inactive graceful shutdown logged", func() (bool, error) {
		all, err := os.ReadFile(logPath)
		if err != nil {
			return false, err
		}
		news := string(all[min(len(before), len(all)):])
		return strings.Contains(news, "graceful node shutdown is inactive") && strings.Contains(news, "systemd is not the init system"), nil
	})
}

// TestRunOnce: `lockstep node --runonce` (no apiserver, no HTTP server) on
// containerd starts a static busybox pod, prints its status and exits 0,
// leaving its container running. The shared node's lockstep is stopped
// meanwhile (it would take the runonce pod for an orphan) and restarted.
func TestRunOnce(t *testing.T) {
	e := setup(t)
	pidFile := filepath.Join(e.dir, "pids", "lockstep")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stop lockstep %d: %v", pid, err)
	}
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() {
		script := filepath.Join("..", "hack", "e2e", "start-lockstep.sh")
		cmd := exec.Command(script)
		cmd.Env = append(os.Environ(), "E2E_DIR="+e.dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", script, err, out)
		}
		e.waitNodeReady(t, 60*time.Second)
	})

	dir := mountertest.TempDir(t)
	mdir := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mdir, "once.yaml"), []byte(staticManifest("once")), 0o644); err != nil {
		t.Fatal(err)
	}
	node := "runonce-node"
	cmd := exec.Command(filepath.Join(e.dir, "bin", "lockstep"), "node", "--runonce", "--runonce-timeout=90s",
		"--container-runtime-endpoint=unix://"+filepath.Join(e.dir, "containerd", "containerd.sock"),
		"--pod-manifest-path="+mdir, "--hostname-override="+node, "--node-ip=127.0.0.1",
		"--root-dir="+filepath.Join(dir, "root"), "--pod-logs-dir="+filepath.Join(dir, "pods"),
		"--container-logs-dir="+filepath.Join(dir, "containers"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	t.Logf("lockstep --runonce took %v; stdout:\n%s", time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("lockstep --runonce: %v\nstderr:\n%s", err, stderr.String())
	}
	want := "pod default/once-" + node + ": Running, containers c=running\n"
	if string(out) != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	// The containers outlive lockstep, as with the kubelet.
	ctx := ctxT(t, 10*time.Second)
	sel := map[string]string{"io.kubernetes.pod.name": "once-" + node}
	cs, err := e.cri.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}, LabelSelector: sel}})
	if err != nil || len(cs.GetContainers()) != 1 {
		t.Errorf("running containers of the runonce pod after exit: %d (%v), want 1", len(cs.GetContainers()), err)
	}
	// Clean the runonce pod away before the shared node comes back.
	sbs, err := e.cri.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sbs.GetItems() {
		if _, err := e.cri.StopPodSandbox(context.Background(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			t.Errorf("stop runonce sandbox: %v", err)
		}
		if _, err := e.cri.RemovePodSandbox(context.Background(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			t.Errorf("remove runonce sandbox: %v", err)
		}
	}
}

// restartWithArgs restarts lockstep with its original arguments plus
// extra, without waiting for the node (which may not exist).
func (e *env) restartWithArgs(t *testing.T, orig []byte, extra ...string) {
	t.Helper()
	args := strings.TrimRight(string(orig), "\n") + "\n" + strings.Join(extra, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(e.dir, "lockstep.args"), []byte(args), 0o644); err != nil {
		t.Fatal(err)
	}
	e.restartLockstep(t)
}

// deleteNode deletes the Node object (no controller manager runs: its
// pods, lease and mirror pods stay).
func (e *env) deleteNode(t *testing.T) {
	t.Helper()
	if err := e.admin.CoreV1().Nodes().Delete(context.Background(), e.node, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete node %s: %v", e.node, err)
	}
	poll(t, 10*time.Second, "node object gone", func() (bool, error) {
		_, err := e.admin.CoreV1().Nodes().Get(context.Background(), e.node, metav1.GetOptions{})
		return err != nil, err
	})
}

// TestRegisterModes: with --register-node=false lockstep never creates
// the Node, says in /healthz?verbose that it waits for it, and adopts the
// one an administrator creates (its labels kept); with
// --register-schedulable=false it registers the Node cordoned.
func TestRegisterModes(t *testing.T) {
	e := setup(t)
	path := filepath.Join(e.dir, "lockstep.args")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.admin.CoreV1().Nodes().Delete(context.Background(), e.node, metav1.DeleteOptions{})
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Error(err)
			return
		}
		e.restartLockstep(t)
		n := e.waitNodeReady(t, 60*time.Second)
		if n.Spec.Unschedulable {
			t.Errorf("node re-registered unschedulable")
		}
	})

	e.deleteNode(t)
	e.restartWithArgs(t, orig, "--register-node=false")
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: insecureTLS()}}
	want := fmt.Sprintf(`[+]node-registration ok (waiting: node %q does not exist yet`, e.node)
	poll(t, 30*time.Second, "/healthz?verbose saying lockstep waits for its Node", func() (bool, error) {
		req, _ := http.NewRequest("GET", e.nodeURL("/healthz?verbose"), nil)
		req.Header.Set("Authorization", "Bearer "+e.adminTok)
		resp, err := hc.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode == 200 && strings.Contains(b.String(), want), fmt.Errorf("%d %q", resp.StatusCode, b.String())
	})
	// Two more registration attempts (each looks for the Node, none
	// creates it).
	e.waitMoreCycles(t, metricRegistrations, nil, 2, 30*time.Second)
	if _, err := e.admin.CoreV1().Nodes().Get(context.Background(), e.node, metav1.GetOptions{}); err == nil {
		t.Fatalf("node %s exists with --register-node=false before any administrator created it", e.node)
	}
	admin := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.node, Labels: map[string]string{"made-by": "admin"}}}
	if _, err := e.admin.CoreV1().Nodes().Create(context.Background(), admin, metav1.CreateOptions{}); err != nil {
		t.Fatalf("administrator creates the node: %v", err)
	}
	n := e.waitNodeReady(t, 60*time.Second)
	if n.Labels["made-by"] != "admin" || n.Labels["kubernetes.io/hostname"] != "" {
		t.Errorf("adopted node labels %v: want the administrator's, untouched", n.Labels)
	}

	e.deleteNode(t)
	e.restartWithArgs(t, orig, "--register-schedulable=false")
	n = e.waitNodeReady(t, 60*time.Second)
	tainted := false
	for _, taint := range n.Spec.Taints {
		tainted = tainted || (taint.Key == corev1.TaintNodeUnschedulable && taint.Effect == corev1.TaintEffectNoSchedule)
	}
	if !n.Spec.Unschedulable || !tainted {
		t.Errorf("node registered with --register-schedulable=false: unschedulable %v, taints %v; want cordoned", n.Spec.Unschedulable, n.Spec.Taints)
	}
}

func insecureTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} }
