package scenarios

import (
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every named scenario is deterministic: the same plan gives the same trace
// hash at GOMAXPROCS 1 and 4 (under -race in make test), and the trace
// holds the node's traffic (CRI answers, API writes, watch deliveries), so
// the hash fingerprints behaviour, not only the schedule.
func TestScenarioDeterminism(t *testing.T) {
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			sc.Steps = 8
			plan := Generate(sc, 11, SeededDrawer(11))
			hashes := map[string]int{}
			var res Result
			for _, procs := range []int{1, 4} {
				prev := runtime.GOMAXPROCS(procs)
				res = Execute(plan, Options{})
				runtime.GOMAXPROCS(prev)
				hashes[res.Hash] = procs
			}
			if len(hashes) != 1 {
				t.Fatalf("plan %s gave different trace hashes at GOMAXPROCS 1 and 4: %v", plan.ActionList(), hashes)
			}
			if res.Events < 200 {
				t.Errorf("only %d trace events", res.Events)
			}
		})
	}
}

func TestTraceHoldsTheNodesTraffic(t *testing.T) {
	var b strings.Builder
	plan := Plan{Scenario: "mixed", Seed: 3, Actions: []Action{{Op: "create", RunMS: 5000}, {Op: "delete", RunMS: 1000}}}
	Execute(plan, Options{Trace: &b})
	for _, kind := range []string{`"kind":"cri","method":"CreateContainer"`, `"kind":"cri","method":"StopContainer"`,
		`"kind":"api-write","verb":"patchStatus"`, `"kind":"watch","type":"MODIFIED"`, `"kind":"action"`} {
		if !strings.Contains(b.String(), kind) {
			t.Errorf("trace has no %s event", kind)
		}
	}
}

// The same schedule with a different runtime answer hashes differently: a
// failed CreateContainer changes the fingerprint.
func TestHashCoversRuntimeAnswers(t *testing.T) {
	base := Plan{Scenario: "mixed", Seed: 5, Actions: []Action{{Op: "create", RunMS: 3000}}}
	withErr := Plan{Scenario: "mixed", Seed: 5, Actions: []Action{{Op: "cri-error", Args: [3]int{5, 0, 1}}, {Op: "create", RunMS: 3000}}}
	if a, b := Execute(base, Options{}), Execute(withErr, Options{}); a.Hash == b.Hash {
		t.Errorf("a failed CreateContainer left the trace hash unchanged (%s)", a.Hash)
	}
}

func TestActionListRoundTrips(t *testing.T) {
	sc, err := Lookup("mixed")
	if err != nil {
		t.Fatal(err)
	}
	plan := Generate(sc, 9, SeededDrawer(9))
	got, err := ParseActions(plan.ActionList())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(plan.Actions, got); diff != "" {
		t.Errorf("action list did not round-trip (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(plan.ReplayCommand(), "go run ./cmd/lockstep sim run --scenario mixed --seed 9 --faults --plan '") {
		t.Errorf("replay command %q", plan.ReplayCommand())
	}
}

// Shrink keeps only the actions the failure needs.
func TestShrinkDropsIrrelevantActions(t *testing.T) {
	plan := Plan{Scenario: "mixed", Seed: 1}
	for i := range 12 {
		op := "wait"
		if i == 7 {
			op = "crash"
		}
		plan.Actions = append(plan.Actions, Action{Op: op, RunMS: 4000})
	}
	fails := func(p Plan) Result {
		for _, a := range p.Actions {
			if a.Op == "crash" {
				return Result{Plan: p, Violations: []Violation{{Invariant: "one-instance"}}}
			}
		}
		return Result{Plan: p}
	}
	got, res := Shrink(plan, 100, fails)
	want := []Action{{Op: "crash", RunMS: 100}}
	if diff := cmp.Diff(want, got.Actions); diff != "" || res.FailureName() != "one-instance" {
		t.Errorf("shrunk to %v (%s), want %v:\n%s", got.Actions, res.FailureName(), want, diff)
	}
}

// Every operation is reachable from mixed, and every operation a scenario
// names exists.
func TestEveryOperationReachable(t *testing.T) {
	ops := Ops()
	mixed, _ := Lookup("mixed")
	for name := range ops {
		if mixed.Mix[name] == 0 {
			t.Errorf("operation %s is not in mixed", name)
		}
	}
	for _, sc := range Scenarios() {
		for name := range sc.Mix {
			if _, ok := ops[name]; !ok {
				t.Errorf("scenario %s names unknown operation %s", sc.Name, name)
			}
		}
	}
}

// lease-fresh under a stalled sync loop: with the relist hung for a minute
// (pod workers waiting on it), the agent still renews its lease, and every
// invariant holds.
func TestLeaseFreshUnderSyncStall(t *testing.T) {
	plan := Plan{Scenario: "termination", Seed: 2, Actions: []Action{
		{Op: "create", RunMS: 45000}, {Op: "sync-stall", Args: [3]int{60000}, RunMS: 1000}, {Op: "delete", RunMS: 1000},
	}}
	res := Execute(plan, Options{})
	if res.Failed() {
		t.Fatal(res.Report())
	}
}
