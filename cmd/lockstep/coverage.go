package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/scenarios"
)

// coverage is what a sweep's runs exercised (`sim sweep --coverage`): how
// many times each of the agent's fault points fired and in how many runs,
// and how many times each invariant was evaluated. Only each seed's first
// run counts, not the shrinker's.
type coverage struct {
	runs      int
	fired     map[string]int // fault point → times fired
	firedRuns map[string]int // fault point → runs it fired in
	evaluated map[string]int // invariant → evaluations
	counted   bool           // some run counted its evaluations
}

func newCoverage() *coverage {
	return &coverage{fired: map[string]int{}, firedRuns: map[string]int{}, evaluated: map[string]int{}}
}

// add counts one run's result.
func (c *coverage) add(res scenarios.Result) {
	c.runs++
	for p, n := range res.FaultsFired {
		c.fired[p] += n
		c.firedRuns[p]++
	}
	if res.Evaluated != nil {
		c.counted = true
	}
	for inv, n := range res.Evaluated {
		c.evaluated[inv] += n
	}
}

// print writes the report: every fault point of the catalogue with its
// firings, then every invariant with its evaluations, each list ending
// with the names that were never exercised.
func (c *coverage) print(out io.Writer, invariants []string) {
	fmt.Fprintf(out, "coverage of %d runs:\n", c.runs)
	fmt.Fprintln(out, "fault points (times fired, runs fired in):")
	var never []string
	for _, p := range deps.Points() {
		n := c.fired[p.Name]
		mark := ""
		if n == 0 {
			mark, never = "  NEVER FIRED", append(never, p.Name)
		}
		fmt.Fprintf(out, "  %-28s %-22s %7d times %5d runs%s\n", p.Name, p.Package, n, c.firedRuns[p.Name], mark)
	}
	fmt.Fprintf(out, "fault points: %d of %d fired", len(deps.Points())-len(never), len(deps.Points()))
	if len(never) > 0 {
		fmt.Fprintf(out, "; never fired: %s", strings.Join(never, ", "))
	}
	fmt.Fprintln(out)
	if !c.counted {
		fmt.Fprintln(out, "invariants: evaluations not counted by this build")
		return
	}
	fmt.Fprintln(out, "invariants (times evaluated):")
	never = nil
	for _, inv := range invariants {
		n := c.evaluated[inv]
		mark := ""
		if n == 0 {
			mark, never = "  NEVER EVALUATED", append(never, inv)
		}
		fmt.Fprintf(out, "  %-28s %9d%s\n", inv, n, mark)
	}
	fmt.Fprintf(out, "invariants: %d of %d evaluated", len(invariants)-len(never), len(invariants))
	if len(never) > 0 {
		fmt.Fprintf(out, "; never evaluated: %s", strings.Join(never, ", "))
	}
	fmt.Fprintln(out)
}
