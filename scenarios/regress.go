package scenarios

import (
	"fmt"
	"slices"
)

// MaxShrunkActions is the most actions a caught bug's shrunk plan may
// keep: a failure a person can read at a glance.
const MaxShrunkActions = 10

// Hunt is what the suite needs to catch a bug: how many seeds it ran before
// the failure it kept, and that failure shrunk.
type Hunt struct {
	// Seeds is the number of seeds run up to and including the failing
	// one kept (0: none failed within the budget).
	Seeds int
	// Found is the failing run kept; Shrunk, the same failure shrunk.
	Found, Shrunk Result
}

// HuntBug runs sc with seeds 1, 2, ... (at most budget of them) until one
// breaks the invariant want (or one of also: other symptoms of the same
// bug), and shrinks that plan with up to shrinkRuns
// runs. Some failures hang on one exact schedule and barely shrink; the
// hunt then goes on to the next failing seed, and keeps the first failure
// that shrinks to MaxShrunkActions or fewer (else the smallest it saw). It
// is how a regression variant proves the suite has teeth.
func HuntBug(sc Scenario, want string, budget, shrinkRuns int, also ...string) (Hunt, error) {
	var best Hunt
	for seed := uint64(1); seed <= uint64(budget); seed++ {
		plan := Generate(sc, seed, SeededDrawer(seed))
		// The regression variants' hunts are documented at the seeds
		// that found them without fault points: kept so.
		plan.Faults = false
		res := Execute(plan, Options{})
		if !res.Failed() {
			continue
		}
		if got := res.FailureName(); got != want && !slices.Contains(also, got) {
			return Hunt{}, fmt.Errorf("seed %d of %s broke %s, not %s:\n%s", seed, sc.Name, res.FailureName(), want, res.Report())
		}
		_, shrunk := Shrink(res.Plan, shrinkRuns, func(p Plan) Result { return Execute(p, Options{}) })
		if best.Seeds == 0 || len(shrunk.Plan.Actions) < len(best.Shrunk.Plan.Actions) {
			best = Hunt{Seeds: int(seed), Found: res, Shrunk: shrunk}
		}
		if len(shrunk.Plan.Actions) <= MaxShrunkActions {
			return best, nil
		}
	}
	if best.Seeds > 0 {
		return best, nil
	}
	return Hunt{}, fmt.Errorf("%s did not break %s within %d seeds", sc.Name, want, budget)
}
