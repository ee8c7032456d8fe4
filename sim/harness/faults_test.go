package harness

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/kernel"
)

// TestDrawFaultsIsTheSeeds: the points a seed turns on and their rates
// are the seed's alone, at the rates the draw allows; across seeds every
// point is sometimes on and sometimes off, and seeds differ.
func TestDrawFaultsIsTheSeeds(t *testing.T) {
	if diff := cmp.Diff(DrawFaults(7), DrawFaults(7)); diff != "" {
		t.Fatalf("seed 7 drew two fault sets (-first +second):\n%s", diff)
	}
	on, off := map[deps.Point]int{}, map[deps.Point]int{}
	distinct := map[string]bool{}
	for seed := uint64(1); seed <= 50; seed++ {
		rates := DrawFaults(seed)
		distinct[rates.String()] = true
		for _, p := range deps.Points() {
			n, ok := rates[p.Point]
			switch {
			case !ok:
				off[p.Point]++
			case slices.Contains([]int{1, 2, 4, 8}, n):
				on[p.Point]++
			default:
				t.Errorf("seed %d: point %s at rate 1/%d", seed, p.Name, n)
			}
		}
	}
	for _, p := range deps.Points() {
		if on[p.Point] == 0 || off[p.Point] == 0 {
			t.Errorf("point %s on in %d of 50 seeds, off in %d: not swarm-drawn", p.Name, on[p.Point], off[p.Point])
		}
	}
	if len(distinct) < 45 {
		t.Errorf("50 seeds drew only %d distinct fault sets", len(distinct))
	}
}

// TestFaultRatesString: the compact form names each point on with its
// rate, in the catalogue's order.
func TestFaultRatesString(t *testing.T) {
	rates := FaultRates{deps.FaultWatchClosed: 4, deps.FaultStatusWriteReplyLost: 1, deps.FaultQueueReversed: 0}
	want := "status-write-reply-lost=1/1,watch-closed=1/4"
	if got := rates.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestFaultPointsNeverFireTwiceRunning: a point at rate 1 fires at every
// call after one that did not; a point not drawn never fires; firings
// are counted by name.
func TestFaultPointsNeverFireTwiceRunning(t *testing.T) {
	k := kernel.New(kernel.Config{Seed: 1})
	defer k.Close()
	f := newFaultPoints(k, 1, FaultRates{deps.FaultWatchClosed: 1})
	var got []bool
	for range 6 {
		got = append(got, f.Fire(deps.FaultWatchClosed))
		if f.Fire(deps.FaultQueueReversed) {
			t.Fatal("a point that is off fired")
		}
	}
	if diff := cmp.Diff([]bool{true, false, true, false, true, false}, got); diff != "" {
		t.Errorf("firings at rate 1 (-want +got):\n%s", diff)
	}
	h := &Harness{faults: f}
	if diff := cmp.Diff(map[string]int{"watch-closed": 3}, h.FaultsFired()); diff != "" {
		t.Errorf("FaultsFired (-want +got):\n%s", diff)
	}
}

// TestNoFaultsByDefault: a harness configured without fault rates gives
// its agents no fault points (Core.Faults nil, as in production) and
// counts nothing.
func TestNoFaultsByDefault(t *testing.T) {
	h := New(Config{Seed: 3})
	defer h.Close()
	if h.faults != nil || h.FaultsFired() != nil {
		t.Fatalf("fault points on without rates: %v", h.FaultsFired())
	}
	called := false
	h.OnFaultPoint(func(deps.Point) { called = true })
	h.StartAgent()
	if err := h.K.RunFor(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if called {
		t.Error("a fault point fired in a harness without fault points")
	}
}
