package scenarios

import (
	"flag"
	"os"
	"testing"
)

// ciChecks is how many plans each scenario runs in `go test` unless
// -rapid.checks says otherwise: the CI budget (30 since the scenario
// registry grew to 23 scenarios; the plans are the first 30 of the same
// seeded ones; `make sim` and sweeps explore further).
const ciChecks = "30"

// raceChecks is the budget when the test binary has the race detector,
// which makes a plan about four times dearer: the first 8 of the same
// plans, so every scenario still runs under -race, while `make test` runs
// this package again without it at ciChecks (the -race run at 30 plans
// took 498 s of a 13-minute `make test` on 2 cores).
const raceChecks = "8"

// ciSeed fixes rapid's seed unless -rapid.seed says otherwise, so that
// `go test` runs the same plans every time (the same budget, no flakes);
// `make sim` and `lockstep sim sweep` explore new ones.
const ciSeed = "1"

func TestMain(m *testing.M) {
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["rapid.checks"] && os.Getenv("RAPID_CHECKS") == "" {
		checks := ciChecks
		if raceDetector {
			checks = raceChecks
		}
		_ = flag.Set("rapid.checks", checks)
	}
	if !set["rapid.seed"] && os.Getenv("RAPID_SEED") == "" {
		_ = flag.Set("rapid.seed", ciSeed)
	}
	os.Exit(m.Run())
}
