package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// PackageReport is the outcome of one package's mutants.
type PackageReport struct {
	Pkg      string
	Total    int    // mutants the operators found
	Sampled  int    // mutants drawn
	Run      string // the scenario judge's -run pattern
	Baseline time.Duration
	Results  []Result
}

// Report is the outcome of a whole run.
type Report struct {
	Command  string
	Mode     string
	Checks   int
	Seed     uint64
	Budget   time.Duration
	Took     time.Duration
	Packages []PackageReport
}

// Tally counts a package's verdicts.
type Tally struct {
	Judged, Unviable, NotRun     int
	ByUnit, ByScenarios, TimeOut int // final verdicts
	Survived                     int
	UnitKills, UnitJudged        int // the unit judge's own record
	ScenKills, ScenJudged        int // the scenario judge's own record
	Took                         time.Duration
}

func killed(v Verdict) bool { return v == KilledByUnit || v == KilledByScenarios || v == TimedOut }

// Count tallies the results.
func Count(rs []Result) Tally {
	var t Tally
	for _, r := range rs {
		switch r.Verdict {
		case NotRun:
			t.NotRun++
			continue
		case Unviable:
			t.Unviable++
			continue
		case KilledByUnit:
			t.ByUnit++
		case KilledByScenarios:
			t.ByScenarios++
		case TimedOut:
			t.TimeOut++
		case Survived:
			t.Survived++
		}
		t.Judged++
		t.Took += r.Took
		if r.Unit != "" {
			t.UnitJudged++
			if killed(r.Unit) {
				t.UnitKills++
			}
		}
		if r.Scenarios != "" {
			t.ScenJudged++
			if killed(r.Scenarios) {
				t.ScenKills++
			}
		}
	}
	return t
}

// score is kills/judged as a percentage, "–" with nothing judged.
func score(kills, judged int) string {
	if judged == 0 {
		return "–"
	}
	return fmt.Sprintf("%d/%d = %.0f%%", kills, judged, 100*float64(kills)/float64(judged))
}

// Survivors are the judged mutants that no judge killed, by file and line.
func (p PackageReport) Survivors() []Result {
	var out []Result
	for _, r := range p.Results {
		if r.Verdict == Survived {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line || out[i].Line == out[j].Line && out[i].Col < out[j].Col
	})
	return out
}

// WriteText prints the survivors and the score table for a terminal.
func WriteText(w io.Writer, r Report) {
	fmt.Fprintf(w, "\nmode %s, %d plans per property, seed %d, %s of %s budget\n", r.Mode, r.Checks, r.Seed, r.Took.Round(time.Second), r.Budget)
	for _, p := range r.Packages {
		for _, s := range p.Survivors() {
			fmt.Fprintf(w, "SURVIVED %s:%d: %s → %s  [%s]\n", s.File, s.Line, s.Orig, s.Mut, s.Op)
		}
	}
	fmt.Fprintf(w, "\n%-16s %7s %7s %6s %8s %5s %5s %5s %8s %6s  %-16s %-16s %s\n", "package", "mutants", "sampled", "judged", "unviable", "unit", "scen", "t/o", "survived", "notrun", "unit score", "scenario score", "score")
	for _, p := range r.Packages {
		t := Count(p.Results)
		fmt.Fprintf(w, "%-16s %7d %7d %6d %8d %5d %5d %5d %8d %6d  %-16s %-16s %s\n", p.Pkg, p.Total, p.Sampled, t.Judged, t.Unviable,
			t.ByUnit, t.ByScenarios, t.TimeOut, t.Survived, t.NotRun,
			score(t.UnitKills, t.UnitJudged), score(t.ScenKills, t.ScenJudged), score(t.ByUnit+t.ByScenarios+t.TimeOut, t.Judged))
	}
}

// WriteMarkdown writes the report as markdown: the command, the score
// table, then every survivor of every package.
func WriteMarkdown(w io.Writer, r Report) {
	fmt.Fprintf(w, "Command: `%s` (mode %s, %d plans per property, sample seed %d); took %s of a %s budget.\n\n",
		r.Command, r.Mode, r.Checks, r.Seed, r.Took.Round(time.Second), r.Budget)
	fmt.Fprintln(w, "| package | mutants | sampled | judged | unviable | killed by unit | killed by scenarios | timed out | survived | not run | unit score | scenario score | score | s/mutant |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, p := range r.Packages {
		t := Count(p.Results)
		per := "–"
		if t.Judged > 0 {
			per = fmt.Sprintf("%.0f", t.Took.Seconds()/float64(t.Judged))
		}
		fmt.Fprintf(w, "| `%s` | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s | %s | %s | %s |\n", p.Pkg, p.Total, p.Sampled, t.Judged, t.Unviable,
			t.ByUnit, t.ByScenarios, t.TimeOut, t.Survived, t.NotRun,
			score(t.UnitKills, t.UnitJudged), score(t.ScenKills, t.ScenJudged), score(t.ByUnit+t.ByScenarios+t.TimeOut, t.Judged), per)
	}
	for _, p := range r.Packages {
		fmt.Fprintf(w, "\n### `%s`\n\nScenario judge: `-run '%s'`.\n\n", p.Pkg, p.Run)
		surv := p.Survivors()
		if len(surv) == 0 {
			fmt.Fprintln(w, "No survivors.")
		}
		for _, s := range surv {
			fmt.Fprintf(w, "- `%s:%d` %s: `%s` → `%s`\n", s.File, s.Line, s.Op, esc(s.Orig), esc(s.Mut))
		}
		fmt.Fprint(w, "\n<details><summary>every judged mutant</summary>\n\n")
		for _, res := range p.Results {
			fmt.Fprintf(w, "- `%s` %s (unit %s, scenarios %s)\n", res.ID(), res.Verdict, orDash(res.Unit), orDash(res.Scenarios))
		}
		fmt.Fprintln(w, "\n</details>")
	}
}

// esc keeps a backquote from ending a markdown code span.
func esc(s string) string { return strings.ReplaceAll(s, "`", "'") }
