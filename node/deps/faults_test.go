package deps_test

import (
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// TestFaultIsFreeWhenNil: with Faults nil (production) no point fires
// and asking allocates nothing.
func TestFaultIsFreeWhenNil(t *testing.T) {
	var core deps.Core
	for _, p := range deps.Points() {
		if core.Fault(p.Point) {
			t.Fatalf("point %s fired with Faults nil", p.Name)
		}
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if core.Fault(deps.FaultStatusWriteReplyLost) {
			t.Fatal("fired")
		}
	})
	if allocs != 0 {
		t.Fatalf("Fault with Faults nil allocates %v times a call, want 0", allocs)
	}
}

// always fires the points it holds.
type always map[deps.Point]bool

func (a always) Fire(p deps.Point) bool { return a[p] }

// TestFaultAsksTheSimulator: with Faults set, Fault is what it answers.
func TestFaultAsksTheSimulator(t *testing.T) {
	core := deps.Core{Faults: always{deps.FaultWatchClosed: true}}
	if !core.Fault(deps.FaultWatchClosed) || core.Fault(deps.FaultQueueReversed) {
		t.Fatal("Fault does not follow the simulator's answers")
	}
}

// TestPointsCatalogue: every point has a unique name, a node/ package
// and the event it stands for.
func TestPointsCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for i, p := range deps.Points() {
		if int(p.Point) != i+1 {
			t.Errorf("point %d listed as %d", i+1, p.Point)
		}
		if p.Name == "" || seen[p.Name] || p.Point.String() != p.Name {
			t.Errorf("point %d: name %q empty, repeated or not its String", p.Point, p.Name)
		}
		seen[p.Name] = true
		if !strings.HasPrefix(p.Package, "node/") || p.Event == "" {
			t.Errorf("point %s: package %q, event %q", p.Name, p.Package, p.Event)
		}
	}
	if deps.Point(0).String() != "unknown-fault-point" {
		t.Errorf("the zero point is named %q", deps.Point(0))
	}
}

// BenchmarkFaultNil is the cost of a fault point in production.
func BenchmarkFaultNil(b *testing.B) {
	var core deps.Core
	b.ReportAllocs()
	for b.Loop() {
		if core.Fault(deps.FaultQueueReversed) {
			b.Fatal("fired")
		}
	}
}
