package scenarios

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A swarm variant keeps only operations of the scenario's mix, each at a
// multiple (1..4) of its weight; wait keeps its weight; some operation
// still brings pods; and the same seed draws the same variant.
func TestSwarmVariantsAreSubMixes(t *testing.T) {
	for _, sc := range Scenarios() {
		for seed := uint64(1); seed <= 50; seed++ {
			v := Swarm(sc, SeededDrawer(SwarmSeed(seed)))
			again := Swarm(sc, SeededDrawer(SwarmSeed(seed)))
			if diff := cmp.Diff(v.Mix, again.Mix); diff != "" {
				t.Fatalf("%s seed %d: two draws differ:\n%s", sc.Name, seed, diff)
			}
			if v.Name != sc.Name {
				t.Fatalf("%s seed %d: variant named %s", sc.Name, seed, v.Name)
			}
			for op, w := range v.Mix {
				base, ok := sc.Mix[op]
				switch {
				case !ok:
					t.Fatalf("%s seed %d: variant has %s, not in the scenario's mix", sc.Name, seed, op)
				case op == "wait" && w != base:
					t.Fatalf("%s seed %d: wait weighs %d, want %d", sc.Name, seed, w, base)
				case w%base != 0 || w/base < 1 || w/base > swarmMaxScale:
					t.Fatalf("%s seed %d: %s weighs %d, not 1..%d times %d", sc.Name, seed, op, w, swarmMaxScale, base)
				}
			}
			if slices.ContainsFunc(slices.Collect(maps.Keys(sc.Mix)), bringsPods) &&
				!slices.ContainsFunc(slices.Collect(maps.Keys(v.Mix)), bringsPods) {
				t.Fatalf("%s seed %d: variant %s brings no pods", sc.Name, seed, MixString(v.Mix))
			}
		}
	}
}

// Over many seeds the variants differ: each of mixed's operations is left
// out by some variant and kept by another, so a sweep visits mixes a
// fixed one never does.
func TestSwarmVariantsVary(t *testing.T) {
	mixed, err := Lookup("mixed")
	if err != nil {
		t.Fatal(err)
	}
	kept, left := map[string]int{}, map[string]int{}
	mixes := map[string]bool{}
	for seed := uint64(1); seed <= 200; seed++ {
		v := Swarm(mixed, SeededDrawer(SwarmSeed(seed)))
		mixes[MixString(v.Mix)] = true
		for op := range mixed.Mix {
			if _, ok := v.Mix[op]; ok {
				kept[op]++
			} else {
				left[op]++
			}
		}
	}
	for op := range mixed.Mix {
		if op == "wait" {
			continue
		}
		if kept[op] == 0 || left[op] == 0 {
			t.Errorf("operation %s kept %d times and left out %d times in 200 variants", op, kept[op], left[op])
		}
	}
	if len(mixes) < 190 {
		t.Errorf("only %d distinct mixes in 200 variants", len(mixes))
	}
}

// A variant whose draws leave out every pod-bringing operation keeps the
// heaviest one, so the node is never empty.
func TestSwarmKeepsAPodOperation(t *testing.T) {
	sc := Scenario{Name: "x", Mix: map[string]int{"create": 2, "create-probed": 3, "crash": 1, "wait": 1}}
	v := Swarm(sc, zeroDrawer{})
	want := map[string]int{"create-probed": 3, "wait": 1}
	if diff := cmp.Diff(want, v.Mix); diff != "" {
		t.Errorf("all left out (-want +got):\n%s", diff)
	}
}

// zeroDrawer draws the lowest value of every range.
type zeroDrawer struct{}

func (zeroDrawer) Int(_ string, lo, _ int) int { return lo }

// ShrinkUntil stops as soon as stop says so, keeping the failing plan it
// had: here after two tries, of which the first (dropping the last
// action) kept failing.
func TestShrinkUntilStops(t *testing.T) {
	plan := Plan{Scenario: "mixed", Seed: 1}
	for range 6 {
		plan.Actions = append(plan.Actions, Action{Op: "crash", RunMS: 4000})
	}
	runs := 0
	fails := func(p Plan) Result {
		runs++
		return Result{Plan: p, Violations: []Violation{{Invariant: "one-instance"}}}
	}
	got, res := ShrinkUntil(plan, 100, func() bool { return runs >= 3 }, fails)
	if runs != 3 || len(got.Actions) != 4 || res.FailureName() != "one-instance" {
		t.Errorf("after %d runs: %d actions (%s), want 3 runs and 4 actions", runs, len(got.Actions), res.FailureName())
	}
}
