//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// agentName names the node agent under test: "lockstep" (make e2e) or what
// LOCKSTEP_E2E_AGENT says (hack/bench-real runs the same figure against the
// upstream kubelet as "kubelet"). Its PID is in $LOCKSTEP_E2E_DIR/pids/<name>.
func agentName() string {
	if a := os.Getenv("LOCKSTEP_E2E_AGENT"); a != "" {
		return a
	}
	return "lockstep"
}

// procUsage is one process's CPU time (its own and that of children it has
// waited for) and its peak resident set since the last reset.
type procUsage struct {
	CPU      time.Duration
	PeakRSS  int64 // bytes (VmHWM)
	Readable bool
}

// pidOf reads the PID the e2e scripts recorded for process name, 0 if none.
func (e *env) pidOf(name string) int {
	b, err := os.ReadFile(filepath.Join(e.dir, "pids", name))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// resetPeakRSS makes the kernel restart the process's VmHWM from its
// current RSS (clear_refs 5), so a later read is the peak of the window.
func resetPeakRSS(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// usageOf reads /proc for pid; Readable is false when the process is gone.
func usageOf(pid int) procUsage {
	if pid <= 0 {
		return procUsage{}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procUsage{}
	}
	// Fields after the parenthesised command: state is field 3, utime 14,
	// stime 15, cutime 16, cstime 17 (1-based, in clock ticks of 1/100 s).
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ticks int64
	for _, i := range []int{14, 15, 16, 17} {
		v, _ := strconv.ParseInt(f[i-3], 10, 64)
		ticks += v
	}
	u := procUsage{CPU: time.Duration(ticks) * 10 * time.Millisecond, Readable: true}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			u.PeakRSS = kb << 10
		}
	}
	return u
}

// figureResult is one run of TestPodStartAndDeleteFigures, appended as a
// JSON line to $LOCKSTEP_E2E_RESULTS when set (hack/bench-real reads it).
type figureResult struct {
	Agent           string             `json:"agent"`
	Pods            int                `json:"pods"`
	StartP50MS      float64            `json:"start_p50_ms"`
	StartP99MS      float64            `json:"start_p99_ms"`
	StartMaxMS      float64            `json:"start_max_ms"`
	DeleteMS        float64            `json:"delete_ms"`
	CRIEmptyMS      float64            `json:"cri_empty_ms"`
	ReqPerPodStart  map[string]float64 `json:"req_per_pod_start"`
	ReqPerPodDelete map[string]float64 `json:"req_per_pod_delete"`
	APIPodReqStart  map[string]float64 `json:"apiserver_pod_req_per_pod_start"`
	APIPodReqDelete map[string]float64 `json:"apiserver_pod_req_per_pod_delete"`
	AgentCPUSeconds float64            `json:"agent_cpu_s"`
	AgentPeakRSSMiB float64            `json:"agent_peak_rss_mib"`
	APIServerCPUSec float64            `json:"apiserver_cpu_s"`
	ContainerdCPUS  float64            `json:"containerd_cpu_s"`
}

// record appends r to $LOCKSTEP_E2E_RESULTS (no-op when unset).
func (r figureResult) record(t *testing.T) {
	t.Helper()
	path := os.Getenv("LOCKSTEP_E2E_RESULTS")
	if path == "" {
		return
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("encode figures: %v", err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("results file: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
