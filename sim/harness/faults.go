package harness

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/trace"
)

// FaultRates turns the agent's fault points on (deps.Faults): a point
// with rate n > 0 fires at about one call in n (never twice running, so
// a point delays or repeats but cannot starve the path it sits on); a
// point absent or at 0 never fires.
type FaultRates map[deps.Point]int

// DrawFaults draws, swarm style, which fault points one seed turns on and
// at what rate: each point is on with probability 3/4, its rate one of
// 1, 1/2, 1/4, 1/8 (a rate of 1 fires at every call after one that did
// not fire). The draw is from seed alone (its own generator,
// not the kernel's), so the same seed turns on the same points.
func DrawFaults(seed uint64) FaultRates {
	choices := [...]int{1, 2, 4, 8} // from every other call (never twice running) to one in 8
	r := rand.New(rand.NewPCG(seed, 0xb0_661f_7))
	rates := FaultRates{}
	for _, p := range deps.Points() {
		on := r.IntN(4) > 0
		rate := choices[r.IntN(len(choices))]
		if on {
			rates[p.Point] = rate
		}
	}
	return rates
}

// String is the rates in a stable compact form, name=1/n by point.
func (f FaultRates) String() string {
	var parts []string
	for _, p := range deps.Points() {
		if n := f[p.Point]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s=1/%d", p.Name, n))
		}
	}
	return strings.Join(parts, ",")
}

// faultPoints is the simulator's deps.Faults: it fires the points of its
// rates from a generator of its own (seeded from the run's seed), so the
// kernel's schedule draws are the same whether a point asks or not, and
// counts and traces every firing.
type faultPoints struct {
	k     *kernel.Kernel
	rates FaultRates
	r     *rand.Rand
	fired map[deps.Point]int
	last  map[deps.Point]bool // fired at its previous call
	// onFire is told of every firing (OnFaultPoint).
	onFire func(deps.Point)
}

func newFaultPoints(k *kernel.Kernel, seed uint64, rates FaultRates) *faultPoints {
	return &faultPoints{k: k, rates: rates, r: rand.New(rand.NewPCG(seed, 0xf4_a1_75)),
		fired: map[deps.Point]int{}, last: map[deps.Point]bool{}}
}

// Fire implements deps.Faults.
func (f *faultPoints) Fire(p deps.Point) bool {
	n := f.rates[p]
	if n <= 0 {
		return false
	}
	fire := !f.last[p] && f.r.IntN(n) == 0
	f.last[p] = fire
	if fire {
		f.fired[p]++
		f.k.Record("fault-point", trace.F("point", p.String()))
		if f.onFire != nil {
			f.onFire(p)
		}
	}
	return fire
}

// OnFaultPoint calls fn each time one of the agent's fault points fires,
// in the agent's task, before the point's rare path runs (a checker
// learns of the faults that stand for the world's); a no-op without
// fault points.
func (h *Harness) OnFaultPoint(fn func(deps.Point)) {
	if h.faults != nil {
		h.faults.onFire = fn
	}
}

// FaultsFired is how many times each fault point fired in this run, by
// name (points that never fired are absent; nil without fault points).
func (h *Harness) FaultsFired() map[string]int {
	if h.faults == nil {
		return nil
	}
	out := make(map[string]int, len(h.faults.fired))
	for p, n := range h.faults.fired {
		out[p.String()] = n
	}
	return out
}
