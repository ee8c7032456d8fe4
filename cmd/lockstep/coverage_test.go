package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/scenarios"
)

// coverageLines runs a sweep of three seeds whose runs report the given
// firings and evaluations, with --coverage, and returns the output's
// lines from the coverage report on.
func coverageLines(t *testing.T, results []scenarios.Result) []string {
	t.Helper()
	n := 0
	o := sweepOptions{scenario: "termination", seeds: "1..3", shard: "0/1", out: t.TempDir(), coverage: true,
		execute: func(p scenarios.Plan) scenarios.Result {
			r := results[n]
			r.Plan = p
			n++
			return r
		}}
	var out bytes.Buffer
	if err := sweep(&out, &bytes.Buffer{}, o); err != nil {
		t.Fatalf("sweep: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "coverage of") {
			return lines[i:]
		}
	}
	t.Fatalf("no coverage report:\n%s", out.String())
	return nil
}

// TestSweepCoverageOfFaultPoints: every point of the catalogue is listed
// with its package, times fired and runs fired in; the ones that never
// fired are flagged and named in the summary; invariants not counted say
// so.
func TestSweepCoverageOfFaultPoints(t *testing.T) {
	lines := coverageLines(t, []scenarios.Result{
		{FaultsFired: map[string]int{"watch-closed": 2}},
		{FaultsFired: map[string]int{"watch-closed": 1, "queue-reversed": 5}},
		{},
	})
	points := deps.Points()
	if len(lines) != 3+len(points)+1 {
		t.Fatalf("%d lines, want a header, %d points, a summary and the invariants' line:\n%s", len(lines), len(points), strings.Join(lines, "\n"))
	}
	want := []string{
		"coverage of 3 runs:",
		"fault points (times fired, runs fired in):",
	}
	if diff := cmp.Diff(want, lines[:2]); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	var never []string
	for i, p := range points {
		line := lines[2+i]
		switch p.Name {
		case "watch-closed":
			if got := strings.Fields(line); !cmp.Equal(got, []string{"watch-closed", "node/podsource", "3", "times", "2", "runs"}) {
				t.Errorf("watch-closed's line %q", line)
			}
		case "queue-reversed":
			if got := strings.Fields(line); !cmp.Equal(got, []string{"queue-reversed", "node/agent", "5", "times", "1", "runs"}) {
				t.Errorf("queue-reversed's line %q", line)
			}
		default:
			never = append(never, p.Name)
			if !strings.HasPrefix(strings.TrimSpace(line), p.Name+" ") || !strings.HasSuffix(line, "0 times     0 runs  NEVER FIRED") {
				t.Errorf("line of a point that never fired: %q", line)
			}
		}
	}
	summary := "fault points: 2 of " + strconv.Itoa(len(points)) + " fired; never fired: " + strings.Join(never, ", ")
	if got := lines[2+len(points)]; got != summary {
		t.Errorf("summary %q, want %q", got, summary)
	}
	if got := lines[len(lines)-1]; got != "invariants: evaluations not counted by this build" {
		t.Errorf("last line %q", got)
	}
}

// TestSweepCoverageOfInvariants: once runs count their evaluations, each
// invariant is listed with its total, the ones never evaluated flagged.
func TestSweepCoverageOfInvariants(t *testing.T) {
	lines := coverageLines(t, []scenarios.Result{
		{Evaluated: map[string]int{"one-instance": 10, "status-prompt": 4}},
		{Evaluated: map[string]int{"one-instance": 7}},
		{Evaluated: map[string]int{}},
	})
	invs := scenarios.Invariants()
	start := 3 + len(deps.Points())
	if got := lines[start]; got != "invariants (times evaluated):" {
		t.Fatalf("invariants' header %q", got)
	}
	var never []string
	for i, inv := range invs {
		got := strings.Fields(lines[start+1+i])
		switch inv {
		case "one-instance":
			if !cmp.Equal(got, []string{"one-instance", "17"}) {
				t.Errorf("one-instance's line %v", got)
			}
		case "status-prompt":
			if !cmp.Equal(got, []string{"status-prompt", "4"}) {
				t.Errorf("status-prompt's line %v", got)
			}
		default:
			never = append(never, inv)
			if !cmp.Equal(got, []string{inv, "0", "NEVER", "EVALUATED"}) {
				t.Errorf("line of an invariant never evaluated: %v", got)
			}
		}
	}
	summary := "invariants: 2 of " + strconv.Itoa(len(invs)) + " evaluated; never evaluated: " + strings.Join(never, ", ")
	if got := lines[len(lines)-1]; got != summary {
		t.Errorf("summary %q, want %q", got, summary)
	}
}
