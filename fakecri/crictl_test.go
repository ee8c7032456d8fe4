package fakecri_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crictlVersion is the crictl pinned in hack/tools/crictl/go.mod.
const crictlVersion = "v1.37.0"

// goEnv returns `go env NAME`.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// buildCrictl returns the cached crictl binary, building it from the
// nested tools module if needed. A failed build fails the test.
func buildCrictl(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(goEnv(t, "GOCACHE")), "lockstep-tools", "crictl-"+crictlVersion)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := bin + ".tmp-" + filepath.Base(t.TempDir())
	cmd := exec.Command("go", "build", "-o", tmp, "sigs.k8s.io/cri-tools/cmd/crictl")
	cmd.Dir = filepath.Join(root, "hack", "tools", "crictl")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building crictl %s in %s: %v\n%s", crictlVersion, cmd.Dir, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// fakecriServer is a running `lockstep fakecri`.
type fakecriServer struct {
	cmd    *exec.Cmd
	stderr *bufio.Reader
	sock   string
}

// startFakecri starts the binary on sock and waits for its "serving" line.
func startFakecri(t *testing.T, lockstep, sock string) *fakecriServer {
	t.Helper()
	cmd := exec.Command(lockstep, "fakecri", "--listen", "unix://"+sock, "--image", "example.com/tools:1=3Mi")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &fakecriServer{cmd: cmd, stderr: bufio.NewReader(pipe), sock: sock}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := s.stderr.ReadString('\n')
	if err != nil || !strings.Contains(line, "fakecri: serving CRI v1 on unix://"+sock) {
		t.Fatalf("lockstep fakecri did not start: %q %v", line, err)
	}
	return s
}

func TestCrictl(t *testing.T) {
	if testing.Short() {
		t.Skip("builds crictl and lockstep")
	}
	root := filepath.Dir(goEnv(t, "GOMOD"))
	crictl := buildCrictl(t, root)
	dir := t.TempDir()
	if len(dir) > 80 {
		var err error
		if dir, err = os.MkdirTemp("", "fc"); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
	}
	lockstep := filepath.Join(dir, "lockstep")
	build := exec.Command("go", "build", "-o", lockstep, "./cmd/lockstep")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building lockstep: %v\n%s", err, out)
	}

	sock := filepath.Join(dir, "fakecri.sock")
	srv := startFakecri(t, lockstep, sock)

	// A second server on the same live socket is refused in one line.
	out, err := exec.Command(lockstep, "fakecri", "--listen", "unix://"+sock).CombinedOutput()
	if want := "lockstep: fakecri: listen on unix://" + sock + ": another server is listening on " + sock + "\n"; err == nil || string(out) != want {
		t.Errorf("second server: %v %q, want failure %q", err, out, want)
	}

	logDir := filepath.Join(dir, "logs")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	endpoint := "unix://" + sock
	cfg := write("crictl.yaml", "runtime-endpoint: "+endpoint+"\nimage-endpoint: "+endpoint+"\ntimeout: 10\n")
	pod := write("pod.json", `{"metadata":{"name":"demo","namespace":"default","uid":"demo-uid"},"log_directory":"`+logDir+`"}`)
	ctr := write("container.json", `{"metadata":{"name":"app"},"image":{"image":"busybox"},"command":["top"],"log_path":"app.log","envs":[{"key":"FAKECRI_LOG","value":"hello"},{"key":"FAKECRI_EXEC","value":"check=3"},{"key":"FAKECRI_HTTP","value":"8080/healthz=503"}]}`)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(crictl, append([]string{"--config", cfg, "-r", endpoint, "-i", endpoint}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("crictl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return strings.TrimSpace(stdout.String())
	}

	if out := run("version"); !strings.Contains(out, "RuntimeName:  fakecri") {
		t.Errorf("crictl version: %q", out)
	}
	podID := run("runp", pod)
	ctrID := run("create", podID, ctr, pod)
	run("start", ctrID)

	var ps struct {
		Containers []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"containers"`
	}
	if err := json.Unmarshal([]byte(run("ps", "-a", "-o", "json")), &ps); err != nil {
		t.Fatal(err)
	}
	if len(ps.Containers) != 1 || ps.Containers[0].ID != ctrID || ps.Containers[0].State != "CONTAINER_RUNNING" {
		t.Errorf("crictl ps: %+v", ps)
	}
	var inspect struct {
		Status struct {
			State   string `json:"state"`
			LogPath string `json:"logPath"`
		} `json:"status"`
		Info struct {
			SandboxID string `json:"sandboxID"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(run("inspect", ctrID)), &inspect); err != nil {
		t.Fatal(err)
	}
	if inspect.Status.State != "CONTAINER_RUNNING" || inspect.Info.SandboxID != podID {
		t.Errorf("crictl inspect: %+v", inspect)
	}
	if out := run("exec", "--sync", ctrID, "echo", "hello"); out != "hello" {
		t.Errorf("crictl exec --sync: %q, want hello", out)
	}
	streams(t, crictl, cfg, endpoint, podID, ctrID)
	if log, err := os.ReadFile(inspect.Status.LogPath); err != nil || !strings.HasSuffix(string(log), " stdout F hello\n") {
		t.Errorf("container log %s: %q %v", inspect.Status.LogPath, log, err)
	}
	// The container exits at SIGTERM (143), so stop does not wait.
	run("stop", "-t", "5", ctrID)
	if err := json.Unmarshal([]byte(run("ps", "-a", "-o", "json")), &ps); err != nil {
		t.Fatal(err)
	}
	if len(ps.Containers) != 1 || ps.Containers[0].State != "CONTAINER_EXITED" {
		t.Errorf("crictl ps after stop: %+v", ps)
	}
	run("rm", ctrID)
	run("stopp", podID)
	run("rmp", podID)
	if out := run("pods", "-q"); out != "" {
		t.Errorf("pods after rmp: %q", out)
	}
	images := run("images")
	for _, want := range []string{"docker.io/library/busybox", "registry.k8s.io/pause", "example.com/tools"} {
		if !strings.Contains(images, want) {
			t.Errorf("crictl images lacks %s:\n%s", want, images)
		}
	}

	// SIGTERM: clean shutdown, socket removed.
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := srv.stderr.ReadString(0)
	if err := srv.cmd.Wait(); err != nil {
		t.Errorf("lockstep fakecri after SIGTERM: %v (stderr %q)", err, rest)
	}
	if !strings.Contains(rest, "fakecri: stopped") {
		t.Errorf("stderr after SIGTERM: %q", rest)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
}

// streams checks crictl's streaming commands against fakecri's streaming
// server: exec output and exit codes, and a port-forward that reaches the
// container's scripted HTTP endpoint.
func streams(t *testing.T, crictl, cfg, endpoint, podID, ctrID string) {
	t.Helper()
	crictlCmd := func(args ...string) *exec.Cmd {
		return exec.Command(crictl, append([]string{"--config", cfg, "-r", endpoint, "-i", endpoint}, args...)...)
	}
	out, err := crictlCmd("exec", ctrID, "echo", "streamed", "hello").Output()
	if err != nil || strings.TrimSpace(string(out)) != "streamed hello" {
		t.Errorf("crictl exec echo: %q %v, want \"streamed hello\"", out, err)
	}
	// crictl exits 1 and names the command's exit code.
	out, err = crictlCmd("exec", ctrID, "check").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "command terminated with exit code 3") {
		t.Errorf("crictl exec check: %v (output %q), want exit code 3", err, out)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	pf := crictlCmd("port-forward", podID, fmt.Sprintf("%d:8080", port))
	var pfOut bytes.Buffer
	pf.Stdout, pf.Stderr = &pfOut, &pfOut
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { pf.Process.Kill(); pf.Wait() }()
	get := func(path string) (int, string, error) {
		var lastErr error
		for range 100 { // until crictl listens
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
			if err != nil {
				lastErr = err
				time.Sleep(50 * time.Millisecond)
				continue
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(body), err
		}
		return 0, "", lastErr
	}
	if code, body, err := get("/healthz"); err != nil || code != 503 || !strings.Contains(body, "port 8080 /healthz: 503") {
		t.Errorf("GET /healthz through crictl port-forward: %d %q %v, want the scripted 503 (crictl: %s)", code, body, err, pfOut.String())
	}
	if code, _, err := get("/"); err != nil || code != 200 {
		t.Errorf("GET / through crictl port-forward: %d %v, want 200 (crictl: %s)", code, err, pfOut.String())
	}
}
