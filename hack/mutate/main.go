// Command mutate is lockstep's mutation tester: it plants small bugs
// (mutants) in the agent's packages, one at a time, and asks whether the
// project's tests notice — first the package's own unit tests, then the
// simulation scenario suite, which is the judge that matters (issue 28:
// the suite measures its own blind spots). A maintained tool such as
// gremlins judges a package by its own tests only; here the scenario
// package judges every node/ package.
//
// Mutants never touch the tree: each is written to a temporary directory
// and handed to `go build -overlay` / `go test -overlay`, so the worktree
// stays clean and the build cache is reused for everything but the
// mutated package and what depends on it.
//
//	go run ./hack/mutate -pkgs 'node/backoff node/termmsg' -budget 20m -max 30
//
// See docs/mutation.md for the operators, the verdicts and the figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// baseRun is the scenario suite's judge for every package: every named
// scenario as a property, and the plans that sweeps once found failing.
const baseRun = "TestScenarios|TestFoundBySweeps"

// relevant names, per package, the hand-written scenario tests of its
// domain, run beside baseRun (they are fast and aimed at the rules the
// package decides). A package not listed is judged by baseRun alone.
var relevant = map[string]string{
	"node/backoff":  "TestCrashLoopCurveAsUpstream|TestCrashLoopBackOff|TestBackOffResetsAfterTenMinutesOfRunning|TestImagePullBackOff|TestProbeFailureBacksOff|TestPullBackoffInvariantCatchesEarlyRetries",
	"node/podutil":  "TestStaticPodPreempts|TestRunOncePodGetsNoNewSandbox|TestEphemeralContainerEventsNameIt|TestClusterCriticalPodPreempts|TestPullPolicyDefaults|TestSidecarStartsBeforeApp|TestSidecarRestartsWhenItCrashes|TestSidecarsStopLastInReverseOrder|TestJobWithSidecarCompletes|TestRestartPolicies|TestContainerRestartRules|TestShortenedGraceStopsSooner|TestForceDeleteStopsAtOnce|TestFailedPodStatusText|TestNeverPullMissingImage|TestCriticalPodPreempts|TestInitContainersRunInOrder",
	"node/termmsg":  "TestTerminationMessage|TestTerminationMessageMounted|TestFailedPodStatusText|TestTerminationMessagesShareThePodsBudget|TestTerminationMessageOfALostLog",
	"node/eviction": "TestEvictionOfTheFirstRanked|TestPressureRegressions|TestLocalStorageEvictions|TestMemoryThresholdWakesTheEvictionManager|TestCriticalPodPreempts|TestAdmissionRejections",
}

// runPattern is the -run pattern of the scenario judge for pkg.
func runPattern(pkg, override string) string {
	if override != "" {
		return override
	}
	names := baseRun
	if r := relevant[pkg]; r != "" {
		names += "|" + r
	}
	return "^(" + names + ")$"
}

type config struct {
	pkgs    []string
	budget  time.Duration
	max     int
	seed    uint64
	mode    string
	run     string
	checks  int
	only    string
	list    bool
	report  string
	verbose bool
	unitTO  time.Duration
	scenTO  time.Duration
}

func main() {
	var c config
	var pkgs string
	flag.StringVar(&pkgs, "pkgs", "node/backoff", "packages to mutate, space- or comma-separated, relative to the module root")
	flag.DurationVar(&c.budget, "budget", 20*time.Minute, "wall-time budget of the whole run, shared fairly between the packages")
	flag.IntVar(&c.max, "max", 0, "at most this many mutants per package, drawn by the seeded sample (0: all)")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of the sample")
	flag.StringVar(&c.mode, "mode", "unit+scenarios", "judges: unit+scenarios (unit tests first, the scenario suite for their survivors), scenarios (the scenario suite only) or both (each mutant by each judge)")
	flag.StringVar(&c.run, "run", "", "-run pattern of the scenario judge (default: TestScenarios, TestFoundBySweeps and the package's relevant tests)")
	flag.IntVar(&c.checks, "checks", 3, "rapid plans per property in the scenario judge (-rapid.checks)")
	flag.StringVar(&c.only, "only", "", "judge only the mutants whose id matches this regexp (e.g. to show that a new test kills one)")
	flag.BoolVar(&c.list, "list", false, "list the mutants (after sampling) and stop")
	flag.StringVar(&c.report, "report", "", "write the markdown report to this file")
	flag.BoolVar(&c.verbose, "v", false, "print the failing output of each judge")
	flag.DurationVar(&c.unitTO, "unit-timeout", 2*time.Minute, "timeout of the unit judge")
	flag.DurationVar(&c.scenTO, "scenario-timeout", 2*time.Minute, "timeout of the scenario judge")
	flag.Parse()
	c.pkgs = strings.FieldsFunc(pkgs, func(r rune) bool { return r == ' ' || r == ',' })
	if err := run(context.Background(), c, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

// moduleRoot finds the directory of go.mod from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// PackageMutants lists every mutant of the non-test Go files of one
// package directory, sorted by file and position.
func PackageMutants(root, pkg string) ([]Mutant, error) {
	files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Mutant
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(root, f)
		if err != nil {
			return nil, err
		}
		ms, err := FileMutants(pkg, filepath.ToSlash(rel), src)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	if len(out) == 0 && len(files) == 0 {
		return nil, fmt.Errorf("%s: no Go files", pkg)
	}
	return out, nil
}

func run(ctx context.Context, c config, stdout, stderr io.Writer) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	switch c.mode {
	case "unit+scenarios", "scenarios", "both":
	default:
		return fmt.Errorf("unknown -mode %q", c.mode)
	}
	var only *regexp.Regexp
	if c.only != "" {
		if only, err = regexp.Compile(c.only); err != nil {
			return err
		}
	}
	start := time.Now()
	deadline := start.Add(c.budget)
	tmp, err := os.MkdirTemp("", "lockstep-mutate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var reports []PackageReport
	for i, pkg := range c.pkgs {
		all, err := PackageMutants(root, pkg)
		if err != nil {
			return err
		}
		if only != nil {
			all = filter(all, func(m Mutant) bool { return only.MatchString(m.ID()) })
		}
		sampled := Sample(all, c.max, c.seed)
		if c.list {
			fmt.Fprintf(stdout, "%s: %d mutants, %d sampled\n", pkg, len(all), len(sampled))
			for _, m := range sampled {
				fmt.Fprintf(stdout, "  %s  %s → %s\n", m.ID(), m.Orig, m.Mut)
			}
			continue
		}
		// A fair share of what is left: the packages still to come get as
		// much each.
		share := time.Until(deadline) / time.Duration(len(c.pkgs)-i)
		pr, err := judgePackage(ctx, c, root, tmp, pkg, len(all), sampled, time.Now().Add(share), stderr)
		if err != nil {
			return err
		}
		reports = append(reports, pr)
	}
	if c.list {
		return nil
	}
	rep := Report{Mode: c.mode, Checks: c.checks, Seed: c.seed, Budget: c.budget, Took: time.Since(start), Packages: reports,
		Command: commandLine()}
	WriteText(stdout, rep)
	if c.report != "" {
		f, err := os.Create(c.report)
		if err != nil {
			return err
		}
		WriteMarkdown(f, rep)
		return f.Close()
	}
	return nil
}

func filter(ms []Mutant, keep func(Mutant) bool) []Mutant {
	var out []Mutant
	for _, m := range ms {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

func judgePackage(ctx context.Context, c config, root, tmp, pkg string, total int, sampled []Mutant, deadline time.Time, stderr io.Writer) (PackageReport, error) {
	j := Judge{Go: goCommand(), Root: root, Mode: c.mode, Run: runPattern(pkg, c.run), Checks: c.checks,
		UnitLimit: c.unitTO, ScenLimit: c.scenTO}
	pr := PackageReport{Pkg: pkg, Total: total, Sampled: len(sampled), Run: j.Run}
	dir := filepath.Join(tmp, strings.ReplaceAll(pkg, "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return pr, err
	}
	t0 := time.Now()
	if err := j.Baseline(ctx, pkg, dir); err != nil {
		return pr, err
	}
	pr.Baseline = time.Since(t0)
	fmt.Fprintf(stderr, "%s: %d mutants, %d sampled; baseline judges pass (%s)\n", pkg, total, len(sampled), pr.Baseline.Round(time.Second))
	for i, m := range sampled {
		if time.Now().After(deadline) {
			pr.Results = append(pr.Results, Result{Mutant: m, Verdict: NotRun})
			continue
		}
		res, log := j.Judge(ctx, m, dir)
		pr.Results = append(pr.Results, res)
		fmt.Fprintf(stderr, "[%d/%d] %s:%d %s: %s → %s  %s (unit %s, scenarios %s) %s\n", i+1, len(sampled), m.File, m.Line, m.Op,
			m.Orig, m.Mut, res.Verdict, orDash(res.Unit), orDash(res.Scenarios), res.Took.Round(time.Second))
		if c.verbose && res.Verdict != Survived {
			fmt.Fprintln(stderr, tail(log))
		}
	}
	return pr, nil
}

func orDash(v Verdict) string {
	if v == "" {
		return "-"
	}
	return string(v)
}

// goCommand is $GO if set (the Makefile's), else go.
func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

func commandLine() string {
	return "go run ./hack/mutate " + strings.Join(os.Args[1:], " ")
}
