package scenarios

import (
	"testing"

	"pgregory.net/rapid"
)

// TestScenarios runs every named scenario as a rapid property: rapid draws
// plans (the kernel's seed is one of its draws) and shrinks a failing one
// to a minimal plan; the failure report ends with the one command that
// replays that plan (`go run ./cmd/lockstep sim run ...`). The number of
// plans per scenario is -rapid.checks (default 100).
func TestScenarios(t *testing.T) {
	t.Parallel()
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			rapid.Check(t, func(rt *rapid.T) {
				seed := rapid.Uint64().Draw(rt, "seed")
				plan := Generate(sc, seed, RapidDrawer(rt))
				if res := Execute(plan, Options{}); res.Failed() {
					rt.Fatal(res.Report())
				}
			})
		})
	}
}
