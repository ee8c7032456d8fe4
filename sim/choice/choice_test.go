package choice_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/sim/choice"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/workload"
)

func TestSeededIsReproducibleAndInRange(t *testing.T) {
	draw := func(seed uint64) []int {
		s := choice.NewSeeded(seed)
		out := make([]int, 200)
		for i := range out {
			out[i] = s.IntN(i%7 + 1)
			if out[i] < 0 || out[i] > i%7 {
				t.Fatalf("IntN(%d) = %d out of range", i%7+1, out[i])
			}
		}
		return out
	}
	if diff := cmp.Diff(draw(9), draw(9)); diff != "" {
		t.Errorf("same seed, different draws:\n%s", diff)
	}
	if cmp.Equal(draw(9), draw(10)) {
		t.Errorf("seeds 9 and 10 drew the same stream")
	}
}

// failureTB captures what rapid reports instead of failing the test.
type failureTB struct {
	testing.TB
	msgs []string
	logs []string
}

func (f *failureTB) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
func (f *failureTB) Fatalf(format string, args ...any) { f.Errorf(format, args...) }
func (f *failureTB) Error(args ...any)                 { f.msgs = append(f.msgs, fmt.Sprint(args...)) }
func (f *failureTB) Fatal(args ...any)                 { f.Error(args...) }
func (f *failureTB) Fail()                             {}
func (f *failureTB) FailNow()                          {}
func (f *failureTB) Failed() bool                      { return len(f.msgs) > 0 }
func (f *failureTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *failureTB) Log(args ...any) { f.logs = append(f.logs, fmt.Sprint(args...)) }

// TestRapidDrivesTheSchedule runs the lost-update race with every scheduling
// choice drawn by rapid: rapid must find the lost update and report the
// (shrunk) schedule that produces it.
func TestRapidDrivesTheSchedule(t *testing.T) {
	if f := flag.Lookup("rapid.nofailfile"); f != nil {
		_ = f.Value.Set("true")
	}
	tb := &failureTB{TB: t}
	runs := 0
	rapid.Check(tb, func(rt *rapid.T) {
		runs++
		k := kernel.New(kernel.Config{Choices: choice.Rapid{T: rt, Label: "schedule"}})
		defer k.Close()
		counter := 0
		workload.LostUpdate(k.Deps(), &counter)
		if err := k.Run(); err != nil {
			rt.Fatalf("run failed: %v", err)
		}
		if counter != 2 {
			rt.Fatalf("lost update: counter = %d", counter)
		}
	})
	report := strings.Join(append(tb.msgs, tb.logs...), "\n")
	t.Log(report)
	if !strings.Contains(report, "lost update: counter = 1") || !strings.Contains(report, "schedule") {
		t.Errorf("rapid did not report the lost update with its schedule draws (after %d runs):\n%s", runs, report)
	}
}
