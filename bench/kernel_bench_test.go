package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// BenchmarkSchedulerSwitch measures task switches: 8 tasks yield to each
// other in a loop, so nearly every scheduling step hands the baton from one
// goroutine to another. Run with -cpu 1 for the one-core figure.
func BenchmarkSchedulerSwitch(b *testing.B) {
	k := kernel.New(kernel.Config{Seed: 1, MaxSteps: 1 << 62})
	defer k.Close()
	ts := k.Tasks()
	const tasks = 8
	per := b.N/tasks + 1
	for i := range tasks {
		ts.Go(fmt.Sprintf("yielder-%d", i), func() {
			for range per {
				ts.Yield()
			}
		})
	}
	b.ResetTimer()
	if err := k.Run(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(k.Steps())/b.Elapsed().Seconds(), "switches/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(k.Steps()), "ns/switch")
}

// BenchmarkVirtualTime runs 1,000 tasks that each wake every second for one
// virtual hour (3.6 million wake-ups) and reports virtual seconds per wall
// second. One iteration is one whole hour.
func BenchmarkVirtualTime(b *testing.B) {
	const tasks, hour = 1000, time.Hour
	var wakeups uint64
	for range b.N {
		k := kernel.New(kernel.Config{Seed: 7, MaxSteps: 1 << 62})
		ts := k.Tasks()
		for i := range tasks {
			ts.Go(fmt.Sprintf("waker-%d", i), func() {
				for {
					k.Sleep(time.Second)
				}
			})
		}
		if err := k.RunFor(hour); err != nil {
			b.Fatal(err)
		}
		wakeups += k.Steps()
		k.Close()
	}
	wall := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)*hour.Seconds()/wall, "virtual-s/s")
	b.ReportMetric(float64(wakeups)/wall, "wakeups/s")
}
