package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// Containers growing past their limit under each restart policy, beside
// node memory pressure: every invariant holds (oom-reported,
// never-restart, backoff and the eviction ones), every pod was OOM-killed,
// and the Always and OnFailure ones were restarted while the Never one
// was not.
func TestOOMUnderEveryRestartPolicy(t *testing.T) {
	plan := Plan{Scenario: "oom", Seed: 7, Actions: []Action{
		{Op: "create-oom", Args: [3]int{0, 1, 1}, RunMS: 1000}, // oom0 Always
		{Op: "create-oom", Args: [3]int{1, 1, 1}, RunMS: 1000}, // oom1 OnFailure
		{Op: "create-oom", Args: [3]int{2, 1, 1}, RunMS: 1000}, // oom2 Never
		{Op: "node-memory", Args: [3]int{2}, RunMS: 40000},     // under the soft threshold
		{Op: "node-memory", Args: [3]int{0}, RunMS: 20000},
	}}
	var b strings.Builder
	res := Execute(plan, Options{Trace: &b})
	if res.Failed() {
		t.Fatal(res.Report())
	}
	trace := b.String()
	for _, pod := range []string{"oom0", "oom1", "oom2"} {
		if !strings.Contains(trace, `"target":"default/`+pod+`/app"`) || !strings.Contains(trace, `"name":"default/`+pod+`"`) {
			t.Errorf("pod %s never ran", pod)
		}
	}
	for pod, want := range map[string]string{"oom0": "app=running/1", "oom1": "app=running/1"} {
		if !strings.Contains(trace, `"name":"default/`+pod+`"`) || !containsWrite(trace, pod, want) {
			t.Errorf("pod %s was not restarted after its OOM kill (no status %s)", pod, want)
		}
	}
	if containsWrite(trace, "oom2", "app=running/1") || !containsWrite(trace, "oom2", "app=terminated(137)/0") {
		t.Errorf("the restartPolicy=Never pod was restarted, or never reported OOM-killed")
	}
}

// containsWrite reports whether the trace has an API write of pod with the
// containers summary want.
func containsWrite(trace, pod, want string) bool {
	for _, l := range strings.Split(trace, "\n") {
		if strings.Contains(l, `"kind":"api-write"`) && strings.Contains(l, `"name":"default/`+pod+`"`) && strings.Contains(l, `"containers":"`+want+`"`) {
			return true
		}
	}
	return false
}

// A kernel OOM kill of a process outside every container is a SystemOOM
// Warning event on the node naming the victim, even when it happened
// while the agent was down.
func TestSystemOOMEvent(t *testing.T) {
	h := start(t, 3)
	h.K.RunFor(2 * time.Second)
	h.SystemOOM("stress", 4242)
	h.CrashAgent()
	h.SystemOOM("java", 77)
	h.K.RunFor(time.Second)
	h.StartAgent()
	runUntil(t, h, "SystemOOM events", 10*time.Second, func() bool { return len(systemOOMs(h)) == 2 })
	want := []string{"System OOM encountered, victim process: stress, pid: 4242", "System OOM encountered, victim process: java, pid: 77"}
	if diff := cmp.Diff(want, systemOOMs(h)); diff != "" {
		t.Errorf("SystemOOM events (-want +got):\n%s", diff)
	}
}

func systemOOMs(h *harness.Harness) []string {
	var out []string
	for _, e := range h.API.User().Events() {
		if e.Reason == "SystemOOM" && e.Type == "Warning" && e.Object.Kind == "Node" && e.Object.Name == h.NodeName {
			out = append(out, e.Message)
		}
	}
	return out
}
