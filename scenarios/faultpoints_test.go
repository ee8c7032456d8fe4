package scenarios

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/regress"
)

// TestFaultPointsFireInMixed: plans drawn by Generate turn the agent's
// fault points on; in a few seeds of mixed they fire (many of them), the
// checker finds nothing, the same plan replays with the same trace and
// the same firings, and the plan without fault points fires none.
func TestFaultPointsFireInMixed(t *testing.T) {
	t.Parallel()
	sc, err := Lookup("mixed")
	if err != nil {
		t.Fatal(err)
	}
	sc.Steps = 8
	points := map[string]bool{}
	var first Result
	for seed := uint64(1); seed <= 3; seed++ {
		plan := Generate(sc, seed, SeededDrawer(seed))
		if !plan.Faults {
			t.Fatalf("seed %d: a drawn plan without fault points", seed)
		}
		res := Execute(plan, Options{})
		if res.Failed() {
			t.Fatal(res.Report())
		}
		if len(res.FaultsFired) == 0 {
			t.Errorf("seed %d: no fault point fired", seed)
		}
		for p := range res.FaultsFired {
			points[p] = true
		}
		if seed == 1 {
			first = res
		}
	}
	if len(points) < 10 {
		t.Errorf("3 seeds of mixed fired %d distinct fault points, want at least 10: %v", len(points), points)
	}

	again := Execute(first.Plan, Options{})
	if again.Hash != first.Hash {
		t.Errorf("seed 1 replayed with trace hash %s, first %s", again.Hash, first.Hash)
	}
	if diff := cmp.Diff(first.FaultsFired, again.FaultsFired); diff != "" {
		t.Errorf("seed 1 replayed with other firings (-first +again):\n%s", diff)
	}

	plain := first.Plan
	plain.Faults = false
	res := Execute(plain, Options{})
	if res.FaultsFired != nil {
		t.Errorf("a plan without fault points fired %v", res.FaultsFired)
	}
	if res.Hash == first.Hash {
		t.Error("the plan ran the same with and without fault points")
	}
}

// TestReplayCommandTurnsFaultsOn: a plan with fault points replays with
// --faults, one without does not.
func TestReplayCommandTurnsFaultsOn(t *testing.T) {
	if len(regress.Tags()) > 0 {
		t.Skip("a deliberately broken build replays with its tags")
	}
	p := Plan{Scenario: "mixed", Seed: 4, Actions: []Action{{Op: "wait", RunMS: 100}}}
	want := "go run ./cmd/lockstep sim run --scenario mixed --seed 4 --plan 'wait:0,0,0@100'"
	if got := p.ReplayCommand(); got != want {
		t.Errorf("ReplayCommand() = %q, want %q", got, want)
	}
	p.Faults = true
	want = "go run ./cmd/lockstep sim run --scenario mixed --seed 4 --faults --plan 'wait:0,0,0@100'"
	if got := p.ReplayCommand(); got != want {
		t.Errorf("ReplayCommand() = %q, want %q", got, want)
	}
}

// TestFaultPointsDocumented: docs/checker.md's table has a row for every
// fault point, with its package.
func TestFaultPointsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/checker.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, p := range deps.Points() {
		if row := "| `" + p.Name + "` | `" + p.Package + "` |"; !strings.Contains(doc, row) {
			t.Errorf("docs/checker.md has no row %q", row)
		}
	}
}
