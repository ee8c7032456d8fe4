package scenarios

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEvaluatedCounts: Checker.Evaluated counts every invariant's
// evaluations; those that move with time run at every check (as many
// times with the schedule as without), the others at most as often, and
// some of them, on an unchanged world, less.
func TestEvaluatedCounts(t *testing.T) {
	sc, err := Lookup("mixed")
	if err != nil {
		t.Fatal(err)
	}
	sc.Steps = 6
	plan := Generate(sc, 3, SeededDrawer(3))
	var scheduled, exhaustive map[string]int
	Execute(plan, Options{Evaluated: func(m map[string]int) { scheduled = m }})
	Execute(plan, Options{Exhaustive: true, Evaluated: func(m map[string]int) { exhaustive = m }})
	for _, name := range []string{"lease-fresh", "no-stuck-created", "grace-honoured", "cgroups-match", "legal-phases", "liveness-restarts", "admission", "one-instance"} {
		if scheduled[name] == 0 {
			t.Errorf("%s was never evaluated: %v", name, scheduled)
		}
	}
	if scheduled["lease-fresh"] != exhaustive["lease-fresh"] {
		t.Errorf("lease-fresh (every check) evaluated %d times with the schedule, %d without", scheduled["lease-fresh"], exhaustive["lease-fresh"])
	}
	if scheduled["legal-phases"] != exhaustive["legal-phases"] {
		t.Errorf("legal-phases (every write) evaluated %d times with the schedule, %d without", scheduled["legal-phases"], exhaustive["legal-phases"])
	}
	fewer := 0
	for name, n := range scheduled {
		if n > exhaustive[name] {
			t.Errorf("%s evaluated %d times with the schedule, more than the %d of every check", name, n, exhaustive[name])
		}
		if n < exhaustive[name] {
			fewer++
		}
	}
	if fewer == 0 {
		t.Errorf("the schedule skipped nothing: %v", scheduled)
	}
	checks := exhaustive["lease-fresh"]
	if one := scheduled["one-instance"]; one >= checks {
		t.Errorf("one-instance evaluated at %d of %d checks: the schedule does not skip an unchanged runtime", one, checks)
	}
}

// TestScheduleKeepsVerdicts: evaluating each invariant only when what it
// reads changed, or a deadline of its came, gives the same violations, at
// the same virtual times, as evaluating everything at every check, and
// the checker never feeds back into the simulation (the same trace).
func TestScheduleKeepsVerdicts(t *testing.T) {
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			sc.Steps = 10
			plan := Generate(sc, 21, SeededDrawer(21))
			a, b := Execute(plan, Options{}), Execute(plan, Options{Exhaustive: true})
			if diff := cmp.Diff(b.Violations, a.Violations); diff != "" {
				t.Errorf("plan %s: violations differ (-every check +scheduled):\n%s", plan.ActionList(), diff)
			}
			if a.Hash != b.Hash {
				t.Errorf("plan %s: trace hash %s with the schedule, %s without", plan.ActionList(), a.Hash, b.Hash)
			}
		})
	}
}
