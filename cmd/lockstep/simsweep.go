package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-dev/lockstep/scenarios"
)

// sweepOptions are the flags of `lockstep sim sweep`.
type sweepOptions struct {
	scenario   string
	seeds      string
	parallel   int
	shard      string
	steps      int
	pods       int
	out        string
	shrink     int
	shrinkTime time.Duration
	swarm      bool
	duration   time.Duration
	print      bool
	coverage   bool
	// execute runs a plan (scenarios.Execute when nil; tests replace it).
	execute func(scenarios.Plan) scenarios.Result
}

func newSimSweepCommand() *cobra.Command {
	o := sweepOptions{}
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run scenarios over a range of seeds, shrink and save each failure",
		Long: `Run one plan per seed of the range and scenario (only this shard's seeds with
--shard i/n: those whose offset in the range is i modulo n, so n machines
share a range). --scenario takes one name, a comma-separated list, or "all";
the scenarios take turns seed by seed. --swarm draws, per seed, which of a
scenario's operations are left out and how much each kept one weighs (swarm
testing), so a sweep reaches states a fixed mix never does. Every drawn plan
turns on a seed-drawn set of the agent's fault points; --coverage prints, after
the sweep, how many times each point fired and in how many seeds (flagging the
points that never fired) and how many times each invariant was evaluated.
--duration bounds
the sweep's wall time: no seed is started after it (those not run are
counted). A progress line shows seeds/s, failures so far and the ETA.

Each failure is saved at once, unshrunk, as a record in --out (for ` + "`sim replay`" + `
and ` + "`sim merge`" + `), then shrunk within --shrink-runs and --shrink-time and saved
again (the record keeps the unshrunk plan too), and reported with the one
command that replays it. Exits non-zero if any seed failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return sweep(cmd.OutOrStdout(), cmd.ErrOrStderr(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "mixed", "named scenario, a comma-separated list, or all (see `lockstep sim list`)")
	f.StringVar(&o.seeds, "seeds", "1..100", "seed range A..B (inclusive), run for each scenario")
	f.IntVar(&o.parallel, "parallel", 1, "runs at once (each is single-threaded)")
	f.StringVar(&o.shard, "shard", "0/1", "run only shard i of n (i/n, 0-based)")
	f.IntVar(&o.steps, "steps", 0, "exact number of actions per plan (0: drawn)")
	f.IntVar(&o.pods, "pods", 0, "pods created before the first action")
	f.StringVar(&o.out, "out", ".sim-failures", "directory for failure records")
	f.IntVar(&o.shrink, "shrink-runs", 200, "runs spent shrinking each failure (0: no shrinking)")
	f.DurationVar(&o.shrinkTime, "shrink-time", time.Minute, "wall time spent shrinking each failure at most (0: no bound)")
	f.BoolVar(&o.swarm, "swarm", false, "draw each seed's mix of operations (swarm testing)")
	f.DurationVar(&o.duration, "duration", 0, "start no seed after this wall time (0: run every seed)")
	f.BoolVar(&o.coverage, "coverage", false, "after the sweep, print how often each fault point fired and each invariant was evaluated")
	f.BoolVar(&o.print, "print-records", false, "also print each failure record on one line of standard output (`"+recordLinePrefix+"{...}`), for `sim merge` to read from saved logs")
	return cmd
}

// parseRange reads "A..B" (or a single seed).
func parseRange(s string) (uint64, uint64, error) {
	a, b, ok := strings.Cut(s, "..")
	if !ok {
		b = a
	}
	lo, err1 := strconv.ParseUint(a, 10, 64)
	hi, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil || hi < lo {
		return 0, 0, fmt.Errorf("--seeds %q: want A..B with A <= B", s)
	}
	return lo, hi, nil
}

// parseShard reads "i/n" with 0 <= i < n.
func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: want i/n with 0 <= i < n", s)
	}
	return i, n, nil
}

// shardSeeds lists the seeds of [lo, hi] that shard i of n runs.
func shardSeeds(lo, hi uint64, i, n int) []uint64 {
	var out []uint64
	for s := lo + uint64(i); s >= lo && s <= hi; s += uint64(n) {
		out = append(out, s)
	}
	return out
}

// sweepScenarios reads --scenario: one name, a comma-separated list or
// "all".
func sweepScenarios(arg string) ([]scenarios.Scenario, error) {
	if arg == "all" {
		return scenarios.Scenarios(), nil
	}
	var out []scenarios.Scenario
	for _, name := range strings.Split(arg, ",") {
		sc, err := scenarios.Lookup(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

// sweepJob is one plan to run: a scenario at a seed.
type sweepJob struct {
	sc   scenarios.Scenario
	seed uint64
}

// sweepTally counts one scenario's runs.
type sweepTally struct{ run, failed int }

func sweep(out, progress io.Writer, o sweepOptions) error {
	scs, err := sweepScenarios(o.scenario)
	if err != nil {
		return err
	}
	lo, hi, err := parseRange(o.seeds)
	if err != nil {
		return err
	}
	si, sn, err := parseShard(o.shard)
	if err != nil {
		return err
	}
	seeds := shardSeeds(lo, hi, si, sn)
	var jobs []sweepJob
	for _, seed := range seeds {
		for _, sc := range scs {
			sc.Steps = o.steps
			jobs = append(jobs, sweepJob{sc, seed})
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("sweep: create %s: %w", o.out, err)
	}
	swarm := ""
	if o.swarm {
		swarm = ", swarm-drawn"
	}
	fmt.Fprintf(out, "sweep %s: %d seeds of %s (shard %d/%d) x %d scenarios%s, %d at once; records in %s\n",
		o.scenario, len(seeds), o.seeds, si, sn, len(scs), swarm, max(o.parallel, 1), o.out)
	work := make(chan sweepJob)
	var mu sync.Mutex
	tally := map[string]*sweepTally{}
	for _, sc := range scs {
		tally[sc.Name] = &sweepTally{}
	}
	done, failures, start := 0, 0, time.Now()
	cov := newCoverage()
	var wg sync.WaitGroup
	for range max(o.parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				rec, bad, res := sweepOne(j.sc, j.seed, o)
				mu.Lock()
				done++
				cov.add(res)
				tally[j.sc.Name].run++
				if bad {
					failures++
					tally[j.sc.Name].failed++
					fmt.Fprintf(progress, "\r\033[K")
					fmt.Fprintf(out, "FAIL %s seed %d: %s\n  replay: %s\n", j.sc.Name, j.seed, rec.Failure, rec.Replay)
					if o.print {
						printRecordLine(out, rec)
					}
				}
				printProgress(progress, done, len(jobs), failures, time.Since(start))
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		if o.duration > 0 && time.Since(start) >= o.duration {
			break
		}
		work <- j
	}
	close(work)
	wg.Wait()
	fmt.Fprintln(progress)
	printTally(out, scs, tally, len(jobs)-done, time.Since(start))
	fmt.Fprintf(out, "%d seeds, %d failed, %v\n", done, failures, time.Since(start).Round(time.Millisecond))
	if o.coverage {
		cov.print(out, scenarios.Invariants())
	}
	if failures > 0 {
		return errFailed
	}
	return nil
}

// printTally prints, when a sweep ran more than one scenario, the runs and
// failures of each, and the jobs --duration left unrun.
func printTally(out io.Writer, scs []scenarios.Scenario, tally map[string]*sweepTally, unrun int, wall time.Duration) {
	if len(scs) > 1 {
		for _, sc := range scs {
			t := tally[sc.Name]
			fmt.Fprintf(out, "  %-16s %6d seeds %4d failed\n", sc.Name, t.run, t.failed)
		}
	}
	if unrun > 0 {
		fmt.Fprintf(out, "--duration reached after %v: %d runs not started\n", wall.Round(time.Second), unrun)
	}
}

// sweepOne runs one seed; on failure it saves the unshrunk record at once,
// then shrinks the plan within the sweep's bounds and saves it again. It
// also returns the first run's result (for --coverage).
func sweepOne(sc scenarios.Scenario, seed uint64, o sweepOptions) (record, bool, scenarios.Result) {
	drawn := sc
	if o.swarm {
		drawn = scenarios.Swarm(sc, scenarios.SeededDrawer(scenarios.SwarmSeed(seed)))
	}
	plan := scenarios.Generate(drawn, seed, scenarios.SeededDrawer(seed))
	plan.Pods = o.pods
	if o.swarm {
		plan.Swarm = scenarios.MixString(drawn.Mix)
	}
	execute := o.execute
	if execute == nil {
		execute = func(p scenarios.Plan) scenarios.Result { return scenarios.Execute(p, scenarios.Options{}) }
	}
	res := execute(plan)
	if !res.Failed() {
		return record{}, false, res
	}
	path := filepath.Join(o.out, fmt.Sprintf("%s-%d.json", sc.Name, seed))
	rec := newRecord(res)
	if err := writeRecord(path, rec); err != nil {
		rec.Error += "; " + err.Error()
		return rec, true, res
	}
	if o.shrink <= 0 {
		return rec, true, res
	}
	var stop func() bool
	if o.shrinkTime > 0 {
		deadline := time.Now().Add(o.shrinkTime)
		stop = func() bool { return time.Now().After(deadline) }
	}
	_, shrunk := scenarios.ShrinkUntil(plan, o.shrink, stop, execute)
	if len(shrunk.Plan.Actions) == len(plan.Actions) && shrunk.Plan.Pods == plan.Pods {
		return rec, true, res
	}
	srec := newRecord(shrunk)
	srec.Unshrunk = &plan
	if err := writeRecord(path, srec); err != nil {
		srec.Error += "; " + err.Error()
	}
	return srec, true, res
}

// printProgress draws the progress line: a bar, seeds/s, failures, ETA.
func printProgress(w io.Writer, done, total, failures int, elapsed time.Duration) {
	const width = 30
	filled := width * done / max(total, 1)
	rate := float64(done) / max(elapsed.Seconds(), 1e-9)
	eta := time.Duration(float64(total-done)/max(rate, 1e-9)) * time.Second
	fmt.Fprintf(w, "\r[%s%s] %d/%d seeds, %.2f seeds/s, %d failed, ETA %v ",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total, rate, failures, eta.Round(time.Second))
}

func newSimMergeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "merge DIR|FILE...",
		Short: "Collect the failure records of many sweep shards into one report",
		Long: `Read every failure record (*.json) in the given directories and files (e.g.
the --out directories of the shards of a sweep, copied from the Job's pods),
or the record lines of saved logs (any other file: the lines a sweep printed
with --print-records, e.g. kubectl logs of each shard's pod)
and print one report grouped by broken invariant, each failure with its
replay command. Exits non-zero if there was any failure.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return merge(cmd.OutOrStdout(), args) },
	}
}

func merge(out io.Writer, paths []string) error {
	var recs []record
	for _, p := range paths {
		files := []string{p}
		if st, err := os.Stat(p); err != nil {
			return fmt.Errorf("merge: %w", err)
		} else if st.IsDir() {
			files, _ = filepath.Glob(filepath.Join(p, "*.json"))
		}
		for _, f := range files {
			rs, err := readRecords(f)
			if err != nil {
				return fmt.Errorf("merge: %w", err)
			}
			recs = append(recs, rs...)
		}
	}
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].Failure != recs[j].Failure {
			return recs[i].Failure < recs[j].Failure
		}
		if recs[i].Scenario != recs[j].Scenario {
			return recs[i].Scenario < recs[j].Scenario
		}
		return recs[i].Seed < recs[j].Seed
	})
	fmt.Fprintf(out, "%d failure records from %d paths\n", len(recs), len(paths))
	last := "\x00"
	for _, r := range recs {
		if r.Failure != last {
			last = r.Failure
			fmt.Fprintf(out, "\n%s:\n", r.Failure)
		}
		first := r.Error
		if len(r.Violations) > 0 {
			first = r.Violations[0]
		}
		fmt.Fprintf(out, "  %s seed %d (%d actions, %s): %s\n    replay: %s\n", r.Scenario, r.Seed, len(r.Plan.Actions), r.Version, first, r.Replay)
	}
	if len(recs) > 0 {
		return errFailed
	}
	return nil
}
