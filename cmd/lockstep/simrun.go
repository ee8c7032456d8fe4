package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-dev/lockstep/scenarios"
)

// errFailed is returned by a run that broke an invariant: the report was
// printed already; main only exits non-zero.
var errFailed = errors.New("simulation failed (see the report above)")

func newSimListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the named scenarios, their operations and the invariants checked",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, "scenarios:")
			for _, sc := range scenarios.Scenarios() {
				fmt.Fprintf(out, "  %-16s %s\n", sc.Name, sc.Doc)
			}
			fmt.Fprintln(out, "operations (op:a,b,c@ms runs op with arguments a, b, c, then ms of virtual time):")
			ops := scenarios.Ops()
			for _, name := range slices.Sorted(maps.Keys(ops)) {
				fmt.Fprintf(out, "  %-20s %s\n", name, ops[name].Doc)
			}
			fmt.Fprintf(out, "invariants: %s\n", strings.Join(scenarios.Invariants(), ", "))
			return nil
		},
	}
}

// runOptions are the flags of `lockstep sim run`.
type runOptions struct {
	scenario  string
	seed      uint64
	steps     int
	pods      int
	plan      string
	tracePath string
	htmlPath  string
	record    string
	shrink    bool
	faults    bool
}

func newSimRunCommand() *cobra.Command {
	o := runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run one seeded scenario against the real agent and print its summary",
		Long: `Run one plan of a named scenario: drawn from --seed, or given with --plan
(as printed by a failure). Prints the summary, the invariants checked and the
trace hash; a failure prints what broke and the one command that replays it,
and exits non-zero.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			plan, err := o.makePlan()
			if err != nil {
				return err
			}
			return runAndReport(cmd.OutOrStdout(), plan, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "mixed", "named scenario (see `lockstep sim list`)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the run (draws the plan and seeds the kernel)")
	f.IntVar(&o.steps, "steps", 0, "exact number of actions (0: drawn, up to the scenario's maximum)")
	f.IntVar(&o.pods, "pods", 0, "pods created before the first action")
	f.StringVar(&o.plan, "plan", "", "run this action list instead of drawing one (op:a,b,c@ms;...)")
	f.StringVar(&o.tracePath, "trace", "", "write the trace as JSON lines to this file")
	f.StringVar(&o.htmlPath, "html", "", "write a self-contained HTML timeline of the run to this file")
	f.StringVar(&o.record, "record", "", "on failure, save the failure record (for `sim replay`) to this file")
	f.BoolVar(&o.shrink, "shrink", false, "on failure, shrink the plan before reporting it")
	f.BoolVar(&o.faults, "faults", false, "with --plan: turn the agent's fault points on, drawn from the seed (a drawn plan always has them)")
	return cmd
}

func (o runOptions) makePlan() (scenarios.Plan, error) {
	sc, err := scenarios.Lookup(o.scenario)
	if err != nil {
		return scenarios.Plan{}, err
	}
	if o.plan != "" {
		actions, err := scenarios.ParseActions(o.plan)
		if err != nil {
			return scenarios.Plan{}, fmt.Errorf("--plan: %w", err)
		}
		return scenarios.Plan{Scenario: sc.Name, Seed: o.seed, Pods: o.pods, Actions: actions, Faults: o.faults}, nil
	}
	sc.Steps = o.steps
	p := scenarios.Generate(sc, o.seed, scenarios.SeededDrawer(o.seed))
	p.Pods = o.pods
	return p, nil
}

// runAndReport runs plan once (with its trace and timeline if asked),
// shrinks it on failure if asked, and prints the summary or the report.
func runAndReport(out io.Writer, plan scenarios.Plan, o runOptions) error {
	res, wall, err := runWithOutputs(plan, o.tracePath, o.htmlPath)
	if err != nil {
		return err
	}
	printSummary(out, res, wall)
	if !res.Failed() {
		return nil
	}
	if o.shrink {
		_, res = scenarios.Shrink(plan, 200, func(p scenarios.Plan) scenarios.Result { return scenarios.Execute(p, scenarios.Options{}) })
		fmt.Fprintf(out, "shrunk to %d actions\n", len(res.Plan.Actions))
	}
	fmt.Fprintln(out, res.Report())
	if o.record != "" {
		if err := writeRecord(o.record, newRecord(res)); err != nil {
			return err
		}
		fmt.Fprintf(out, "record: %s (replay: go run ./cmd/lockstep sim replay %s)\n", o.record, o.record)
	}
	return errFailed
}

// runWithOutputs executes plan, writing its trace and timeline if paths are
// given, and returns the result and the wall time it took.
func runWithOutputs(plan scenarios.Plan, tracePath, htmlPath string) (scenarios.Result, time.Duration, error) {
	var sinks []io.Writer
	var tl *timelineWriter
	if tracePath != "" {
		f, err := os.Create(tracePath)
		if err != nil {
			return scenarios.Result{}, 0, fmt.Errorf("sim run: open trace %s: %w", tracePath, err)
		}
		defer f.Close()
		sinks = append(sinks, f)
	}
	if htmlPath != "" {
		tl = newTimelineWriter()
		sinks = append(sinks, tl)
	}
	o := scenarios.Options{}
	if len(sinks) > 0 {
		o.Trace = io.MultiWriter(sinks...)
	}
	start := time.Now()
	res := scenarios.Execute(plan, o)
	wall := time.Since(start)
	if tl != nil {
		if err := tl.write(htmlPath, res); err != nil {
			return res, wall, err
		}
	}
	return res, wall, nil
}

func printSummary(out io.Writer, res scenarios.Result, wall time.Duration) {
	p := res.Plan
	verdict := "PASS"
	if res.Failed() {
		verdict = "FAIL (" + res.FailureName() + ")"
	}
	fmt.Fprintf(out, "scenario %s, seed %d: %s\n", p.Scenario, p.Seed, verdict)
	fmt.Fprintf(out, "  actions:      %d (+%d pods up front), agent started %d times\n", len(p.Actions), p.Pods, res.Restarts)
	fmt.Fprintf(out, "  virtual time: %v in %d scheduling steps, %d trace events\n", res.Elapsed, res.Steps, res.Events)
	fmt.Fprintf(out, "  invariants:   %s\n", strings.Join(scenarios.Invariants(), " "))
	fmt.Fprintf(out, "  trace hash:   %s\n", res.Hash)
	rate := 0.0
	if wall > 0 {
		rate = res.Elapsed.Seconds() / wall.Seconds()
	}
	fmt.Fprintf(out, "  wall time:    %v (%.0f simulated s per wall s; not part of the trace)\n", wall.Round(time.Millisecond), rate)
}

// record is a saved failure: enough to replay it with `sim replay`.
type record struct {
	Scenario   string         `json:"scenario"`
	Seed       uint64         `json:"seed"`
	Version    string         `json:"version"`
	Failure    string         `json:"failure"`
	Violations []string       `json:"violations,omitempty"`
	Error      string         `json:"error,omitempty"`
	Hash       string         `json:"hash"`
	Replay     string         `json:"replay"`
	Plan       scenarios.Plan `json:"plan"`
	// Unshrunk is the plan as first drawn, when Plan is its shrunk form.
	Unshrunk *scenarios.Plan `json:"unshrunk,omitempty"`
}

func newRecord(res scenarios.Result) record {
	r := record{Scenario: res.Plan.Scenario, Seed: res.Plan.Seed, Version: version, Failure: res.FailureName(),
		Hash: res.Hash, Replay: res.Plan.ReplayCommand(), Plan: res.Plan}
	for _, v := range res.Violations {
		r.Violations = append(r.Violations, v.String())
	}
	if res.Err != nil {
		r.Error = res.Err.Error()
	}
	return r
}

func writeRecord(path string, r record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode failure record of %s seed %d: %w", r.Scenario, r.Seed, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write failure record %s: %w", path, err)
	}
	return nil
}

func readRecord(path string) (record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return record{}, fmt.Errorf("read failure record: %w", err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return record{}, fmt.Errorf("decode failure record %s: %w", path, err)
	}
	return r, nil
}

// recordLinePrefix starts the line that carries a failure record in a
// sweep's output (--print-records).
const recordLinePrefix = "lockstep-sim-record "

// printRecordLine prints r as one line of w, after recordLinePrefix.
func printRecordLine(w io.Writer, r record) {
	b, err := json.Marshal(r)
	if err != nil { // a record is plain data: this does not happen
		fmt.Fprintf(w, "%s{\"error\":%q}\n", recordLinePrefix, err.Error())
		return
	}
	fmt.Fprintf(w, "%s%s\n", recordLinePrefix, b)
}

// readRecords reads the failure records of a file: a saved record (a JSON
// object), or the record lines of a sweep's saved output.
func readRecords(path string) ([]record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read failure records: %w", err)
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		r, err := readRecord(path)
		return []record{r}, err
	}
	var out []record
	for i, line := range strings.Split(string(b), "\n") {
		_, js, ok := strings.Cut(line, recordLinePrefix)
		if !ok {
			continue
		}
		var r record
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			return nil, fmt.Errorf("decode failure record at %s:%d: %w", path, i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func newSimReplayCommand() *cobra.Command {
	var tracePath, htmlPath string
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Replay a failing run from its saved record and check its trace hash",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			r, err := readRecord(args[0])
			if err != nil {
				return err
			}
			if r.Version != version {
				fmt.Fprintf(out, "note: recorded by lockstep %s, replaying with %s: the trace may differ\n", r.Version, version)
			}
			res, wall, err := runWithOutputs(r.Plan, tracePath, htmlPath)
			if err != nil {
				return err
			}
			printSummary(out, res, wall)
			same := "identical to"
			if res.Hash != r.Hash {
				same = "DIFFERENT from"
			}
			fmt.Fprintf(out, "  trace hash %s the recorded %s\n", same, r.Hash)
			if res.Failed() {
				fmt.Fprintln(out, res.Report())
				return errFailed
			}
			fmt.Fprintln(out, "the recorded failure did not happen again")
			return nil
		},
	}
	cmd.Flags().StringVar(&tracePath, "trace", "", "write the trace as JSON lines to this file")
	cmd.Flags().StringVar(&htmlPath, "html", "", "write a self-contained HTML timeline of the run to this file")
	return cmd
}
