package scenarios

import (
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// agentRun runs the complete agent through a busy workload with faults and
// an agent crash and returns the trace hash and event count.
func agentRun(t *testing.T, seed uint64) (string, uint64) {
	t.Helper()
	h := harness.New(harness.Config{Seed: seed})
	defer h.Close()
	h.StartAgent()
	h.Runtime.SetListStaleness(time.Second)
	createMixed(t, h.NodeName, func(p *corev1.Pod) { mustCreate(t, h, p) })
	if err := h.K.RunFor(40 * time.Second); err != nil {
		t.Fatal(err)
	}
	h.CrashAgent()
	if err := h.API.User().DeletePodGracefully("default", "server-0", nil); err != nil {
		t.Fatal(err)
	}
	h.StartAgent()
	if err := h.K.RunFor(80 * time.Second); err != nil {
		t.Fatal(err)
	}
	return h.K.Trace().Hash(), h.K.Trace().Events()
}

func TestAgentRunsAreDeterministic(t *testing.T) {
	hashes := map[string]bool{}
	var events uint64
	for _, procs := range []int{1, 4, 2} {
		prev := runtime.GOMAXPROCS(procs)
		h, n := agentRun(t, 77)
		runtime.GOMAXPROCS(prev)
		hashes[h] = true
		events = n
	}
	if len(hashes) != 1 {
		t.Fatalf("seed 77 gave different traces across runs and GOMAXPROCS: %v", hashes)
	}
	if events < 1000 {
		t.Errorf("only %d trace events: the workload did not run", events)
	}
	if other, _ := agentRun(t, 78); hashes[other] {
		t.Errorf("seeds 77 and 78 gave the same trace")
	}
}
