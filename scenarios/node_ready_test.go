package scenarios

import (
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// node-ready under a hung status call (upstream #94829): a container status
// call hangs for 3.6 minutes; the agent gives up on that pod's refresh
// after PodStatusTimeout, its relists go on, the node stays Ready and
// every invariant holds.
func TestNodeReadyUnderAHungStatusCall(t *testing.T) {
	plan := Plan{Scenario: "runtime-faults", Seed: 4, Actions: []Action{
		{Op: "create", Args: [3]int{1}, RunMS: 100}, {Op: "status-hang", Args: [3]int{216087}, RunMS: 100},
	}}
	res := Execute(plan, Options{})
	if res.Failed() {
		t.Fatal(res.Report())
	}
}

// node-ready is not vacuous: a runtime that reports itself not ready,
// unannounced to the checker, makes the node NotReady and the checker says
// so; announced (RuntimeDown), it is excused.
func TestNodeReadyCatchesANotReadyNode(t *testing.T) {
	for _, announced := range []bool{false, true} {
		h := harness.New(harness.Config{Seed: 53})
		c := NewChecker(h)
		h.StartAgent()
		if err := RunChecked(h, c, time.Minute, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if v := c.Violations(); len(v) != 0 {
			t.Fatalf("violations before anything is wrong: %v", v)
		}
		if announced {
			c.RuntimeDown(time.Minute)
		}
		h.Runtime.SetRuntimeReady(false)
		if err := RunChecked(h, c, time.Minute, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		got := ""
		if v := c.Violations(); len(v) > 0 {
			got = v[0].Invariant
		}
		want := "node-ready"
		if announced {
			want = ""
		}
		if got != want {
			t.Errorf("announced=%v: first violation %q, want %q (%v)", announced, got, want, c.Violations())
		}
		h.Close()
	}
}
