package scenarios

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/cm/cpumanager"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

func startStaticCPUs(t *testing.T, seed uint64, tune func(*harness.Config)) *harness.Harness {
	t.Helper()
	cfg := harness.Config{Seed: seed, Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) }}
	StaticCPUNode(&cfg)
	if tune != nil {
		tune(&cfg)
	}
	h := harness.New(cfg)
	t.Cleanup(h.Close)
	h.StartAgent()
	return h
}

// runningCPUs is the cpuset each running container of the pod runs on,
// by container name (fakecri's truth).
func runningCPUs(h *harness.Harness, uid types.UID) map[string]string {
	out := map[string]string{}
	for _, c := range PodContainers(h, uid) {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		res, _ := h.Runtime.TrueResources(c.ID)
		out[c.Name] = res.GetCpusetCpus()
	}
	return out
}

func wantCPUs(t *testing.T, h *harness.Harness, what string, uid types.UID, want map[string]string) {
	t.Helper()
	if d := cmp.Diff(want, runningCPUs(h, uid)); d != "" {
		t.Errorf("%s: cpusets (-want +got):\n%s", what, d)
	}
}

// TestStaticPolicyPinsGuaranteedPods: on the 16-CPU machine with CPU 0
// reserved, a Guaranteed pod asking for 2 CPUs gets a whole core (CPUs 1
// and 9: the fullest NUMA node's first free core), its 250m sibling and
// a BestEffort pod started before it run on the rest once the reconcile
// loop ran, the assignment survives an agent crash (the checkpoint), and
// deleting the pod gives the CPUs back to the shared containers.
func TestStaticPolicyPinsGuaranteedPods(t *testing.T) {
	h := startStaticCPUs(t, 3, nil)
	c := NewChecker(h)
	be := mustCreate(t, h, NewPod("be", h.NodeName))
	if err := RunChecked(h, c, 5*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	wantCPUs(t, h, "BestEffort alone", be.UID, map[string]string{"app": "0-15"})
	g := mustCreate(t, h, PinnedPod("g", h.NodeName, 2, 1))
	if err := RunChecked(h, c, 3*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	wantCPUs(t, h, "Guaranteed pod started", g.UID, map[string]string{"app": "1,9", "web": "0,2-8,10-15"})
	wantCPUs(t, h, "BestEffort before the reconcile", be.UID, map[string]string{"app": "0-15"})
	if err := RunChecked(h, c, 12*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	wantCPUs(t, h, "BestEffort after the reconcile", be.UID, map[string]string{"app": "0,2-8,10-15"})
	state, err := h.Files.ReadFile("/var/lib/lockstep/" + cpumanager.CheckpointFile)
	if err != nil || !strings.Contains(string(state), `"`+string(g.UID)+`": {`) || !strings.Contains(string(state), `"defaultCpuSet": "0,2-8,10-15"`) {
		t.Errorf("checkpoint: %v\n%s", err, state)
	}

	h.CrashAgent()
	h.StartAgent()
	if err := RunChecked(h, c, 15*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	wantCPUs(t, h, "Guaranteed pod after a restart", g.UID, map[string]string{"app": "1,9", "web": "0,2-8,10-15"})
	wantCPUs(t, h, "BestEffort after a restart", be.UID, map[string]string{"app": "0,2-8,10-15"})

	if err := h.API.User().DeletePodGracefully("default", "g", nil); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "pod g gone", time.Minute, func() bool { _, ok := APIPod(h, "default", "g"); return !ok })
	if err := RunChecked(h, c, 12*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	wantCPUs(t, h, "BestEffort after the deletion", be.UID, map[string]string{"app": "0-15"})
	if v := c.Violations(); len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
}

// TestInitContainerCPUsReused: an init container's exclusive CPUs are
// offered again to the app container after it, as the kubelet reuses
// them: the init container gets a whole core of the fullest NUMA node and
// the free sibling of the reserved CPU (1,9 then 8), the app that core.
func TestInitContainerCPUsReused(t *testing.T) {
	h := startStaticCPUs(t, 5, nil)
	c := NewChecker(h)
	p := mustCreate(t, h, PinnedPod("p", h.NodeName, 2, 2))
	var initCPUs string
	runUntil(t, h, "the init container runs", 10*time.Second, func() bool {
		initCPUs = runningCPUs(h, p.UID)["prep"]
		return initCPUs != ""
	})
	runUntil(t, h, "the app runs", 10*time.Second, func() bool { return runningCPUs(h, p.UID)["app"] != "" })
	if got := runningCPUs(h, p.UID)["app"]; initCPUs != "1,8-9" || got != "1,9" {
		t.Errorf("init container on %q, app on %q; want 1,8-9 then 1,9 (a whole core of the init's CPUs)", initCPUs, got)
	}
	if err := RunChecked(h, c, 15*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v := c.Violations(); len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
}

// TestFullPCPUsOnlyRejects: with full-pcpus-only, a pod asking for an odd
// number of CPUs on a 2-thread-per-core machine fails admission with
// SMTAlignmentError, as the kubelet rejects it, and never runs.
func TestFullPCPUsOnlyRejects(t *testing.T) {
	h := startStaticCPUs(t, 7, func(cfg *harness.Config) {
		cfg.Agent.CPUManager.Options = map[string]string{cpumanager.OptionFullPCPUsOnly: "true"}
	})
	odd := mustCreate(t, h, PinnedPod("odd", h.NodeName, 3, 0))
	even := mustCreate(t, h, PinnedPod("even", h.NodeName, 4, 0))
	runUntil(t, h, "odd fails and even runs", 20*time.Second, func() bool {
		return PodIs(h, "default", "odd", corev1.PodFailed, false) && PodIs(h, "default", "even", corev1.PodRunning, true)
	})
	got, _ := APIPod(h, "default", "odd")
	want := "Pod was rejected: SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"
	if got.Status.Reason != cpumanager.ReasonSMTAlignmentError || got.Status.Message != want {
		t.Errorf("odd: reason %q message %q; want %q %q", got.Status.Reason, got.Status.Message, cpumanager.ReasonSMTAlignmentError, want)
	}
	if n := len(PodContainers(h, odd.UID)); n != 0 {
		t.Errorf("the refused pod has %d containers", n)
	}
	// Whole cores: 4 CPUs on one NUMA node, the reserved CPU's core (0, 8) avoided.
	wantCPUs(t, h, "even", even.UID, map[string]string{"app": "2-3,10-11"})
}

// The exclusive-cpus checker catches each kind of violation.
func TestCPUInvariantCatchesViolations(t *testing.T) {
	h := startStaticCPUs(t, 9, nil)
	c := NewChecker(h)
	be := mustCreate(t, h, NewPod("be", h.NodeName))
	g1 := mustCreate(t, h, PinnedPod("g1", h.NodeName, 2, 0))
	g2 := mustCreate(t, h, PinnedPod("g2", h.NodeName, 1, 0))
	if err := RunChecked(h, c, 15*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v := c.Violations(); len(v) != 0 {
		t.Fatalf("violations before any fault: %v", v)
	}
	id := func(uid types.UID) string { return PodContainers(h, uid)[0].ID }
	set := func(uid types.UID, cpus string) {
		if err := h.Runtime.UpdateContainerResources(context.Background(), id(uid), &runtimeapi.ContainerResources{
			Linux: &runtimeapi.LinuxContainerResources{CpusetCpus: cpus}}); err != nil {
			t.Fatal(err)
		}
	}
	g1CPUs := runningCPUs(h, g1.UID)["app"]
	set(g2.UID, g1CPUs) // two exclusive containers share CPUs, one on the wrong count
	set(be.UID, g1CPUs) // a shared container stays on exclusive CPUs
	if err := RunChecked(h, c, 20*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range c.Violations() {
		if v.Invariant != "exclusive-cpus" {
			t.Errorf("unexpected violation %v", v)
			continue
		}
		switch {
		case strings.Contains(v.Detail, "share CPUs"):
			got = append(got, "share")
		case strings.Contains(v.Detail, "asks for 1 CPUs"):
			got = append(got, "size")
		case strings.Contains(v.Detail, "still runs on"):
			got = append(got, "stays")
		default:
			got = append(got, v.Detail)
		}
	}
	if d := cmp.Diff([]string{"share", "size", "stays"}, got); d != "" {
		t.Errorf("violations (-want +got):\n%s", d)
	}
}

// An agent whose CPU manager checkpoint was written under another policy
// refuses to start, naming the file to delete (as the kubelet does).
func TestCheckpointOfAnotherPolicyStopsTheAgent(t *testing.T) {
	path := "/var/lib/lockstep/" + cpumanager.CheckpointFile
	none := harness.New(harness.Config{Seed: 1})
	t.Cleanup(none.Close)
	none.StartAgent()
	written, err := none.Files.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := harness.Config{Seed: 1}
	StaticCPUNode(&cfg)
	h := harness.New(cfg)
	t.Cleanup(h.Close)
	if err := h.Files.MkdirAll("/var/lib/lockstep"); err != nil {
		t.Fatal(err)
	}
	h.Files.WriteFile(path, written)
	defer func() {
		msg := fmt.Sprint(recover())
		for _, want := range []string{`could not restore state from checkpoint: configured policy "static" differs from state checkpoint policy "none"`, path} {
			if !strings.Contains(msg, want) {
				t.Errorf("start failure %q does not say %q", msg, want)
			}
		}
	}()
	h.StartAgent()
	t.Error("the agent started")
}
