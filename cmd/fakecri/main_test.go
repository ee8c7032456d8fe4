package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLinksNoAgentCode: the standalone binary links the fake runtime and
// its servers, none of the agent's packages (node/...), the simulator's or
// client-go — what keeps it small.
func TestLinksNoAgentCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var bad []string
	for _, pkg := range strings.Fields(string(out)) {
		for _, p := range []string{"github.com/lockstep-dev/lockstep/node/", "github.com/lockstep-dev/lockstep/scenarios", "k8s.io/client-go/", "pgregory.net/rapid"} {
			if strings.HasPrefix(pkg, p) {
				bad = append(bad, pkg)
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("cmd/fakecri links %d packages it should not: %v", len(bad), bad)
	}
}

// TestServesAndStops: the binary serves CRI on its socket and its own
// profiles on --pprof-address, and on SIGTERM stops with status 0 and
// removes the socket.
func TestServesAndStops(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "fakecri")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sock := filepath.Join(dir, "cri.sock")
	cmd := exec.Command(bin, "--listen", "unix://"+sock, "--pprof-address", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// The start lines say where profiles are, then that it serves.
	lines := bufio.NewScanner(stderr)
	var pprofURL string
	for lines.Scan() {
		line := lines.Text()
		if rest, ok := strings.CutPrefix(line, "fakecri: profiles on "); ok {
			pprofURL = rest
		}
		if strings.HasPrefix(line, "fakecri: serving CRI v1 on unix://"+sock) {
			break
		}
	}
	if pprofURL == "" {
		t.Fatal("no \"fakecri: profiles on\" line before the serving line")
	}
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("socket after the serving line: %v", err)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(pprofURL + "heap")
	if err != nil {
		t.Fatalf("GET heap profile: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) == 0 {
		t.Errorf("GET %sheap: %s, %d bytes; want 200 and a profile", pprofURL, resp.Status, len(body))
	}
	go io.Copy(io.Discard, stderr)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v, want status 0", err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket after the stop: %v, want it removed", err)
	}
}
