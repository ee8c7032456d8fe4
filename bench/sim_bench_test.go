package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/scenarios"
)

// BenchmarkSimMixed runs plans of the mixed scenario (12 actions each, the
// invariants checked every 100 ms of virtual time, then 3 minutes settling)
// on a node with P pods created up front, one plan per iteration (seeds
// 1, 2, ...), and reports simulated seconds per wall second and seeds
// (plans) per minute on one core.
func BenchmarkSimMixed(b *testing.B) {
	sc, err := scenarios.Lookup("mixed")
	if err != nil {
		b.Fatal(err)
	}
	sc.Steps = 12
	for _, pods := range []int{10, 50, 100, 1000} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			var virtual time.Duration
			failed := 0
			start := time.Now()
			for i := range b.N {
				seed := uint64(i + 1)
				plan := scenarios.Generate(sc, seed, scenarios.SeededDrawer(seed))
				plan.Pods = pods
				res := scenarios.Execute(plan, scenarios.Options{})
				virtual += res.Elapsed
				if res.Failed() {
					failed++
				}
			}
			wall := time.Since(start)
			b.ReportMetric(virtual.Seconds()/wall.Seconds(), "sim-s/s")
			b.ReportMetric(float64(b.N)/wall.Minutes(), "seeds/min")
			b.ReportMetric(float64(failed), "failed")
		})
	}
}
