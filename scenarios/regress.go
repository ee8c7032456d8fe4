package scenarios

import "fmt"

// Hunt is what the suite needs to catch a bug: how many seeds it ran before
// a failure, and the failure shrunk.
type Hunt struct {
	// Seeds is the number of seeds run up to and including the first
	// failing one (0: none failed within the budget).
	Seeds int
	// Found is the first failing run; Shrunk, the same failure shrunk.
	Found, Shrunk Result
}

// HuntBug runs sc with seeds 1, 2, ... (at most budget of them) until one
// breaks the invariant want, then shrinks that plan with up to shrinkRuns
// runs. It is how a regression variant proves the suite has teeth.
func HuntBug(sc Scenario, want string, budget, shrinkRuns int) (Hunt, error) {
	for seed := uint64(1); seed <= uint64(budget); seed++ {
		res := Execute(Generate(sc, seed, SeededDrawer(seed)), Options{})
		if !res.Failed() {
			continue
		}
		if res.FailureName() != want {
			return Hunt{}, fmt.Errorf("seed %d of %s broke %s, not %s:\n%s", seed, sc.Name, res.FailureName(), want, res.Report())
		}
		_, shrunk := Shrink(res.Plan, shrinkRuns, func(p Plan) Result { return Execute(p, Options{}) })
		return Hunt{Seeds: int(seed), Found: res, Shrunk: shrunk}, nil
	}
	return Hunt{}, fmt.Errorf("%s did not break %s within %d seeds", sc.Name, want, budget)
}
