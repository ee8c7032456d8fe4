package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/scenarios"
)

// lockstep runs the command line with args and returns its output.
func lockstep(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

var hashRE = regexp.MustCompile(`trace hash:\s+([0-9a-f]{16})`)

func TestSimRunPrintsSummaryAndSameHash(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.jsonl")
	out1, err := lockstep(t, "sim", "run", "--scenario", "mixed", "--seed", "3", "--steps", "5", "--trace", trace)
	if err != nil {
		t.Fatalf("sim run: %v\n%s", err, out1)
	}
	out2, err := lockstep(t, "sim", "run", "--scenario", "mixed", "--seed", "3", "--steps", "5")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"scenario mixed, seed 3: PASS", "invariants:", "sigterm-first", "lease-fresh"} {
		if !strings.Contains(out1, want) {
			t.Errorf("summary has no %q:\n%s", want, out1)
		}
	}
	h1, h2 := hashRE.FindStringSubmatch(out1), hashRE.FindStringSubmatch(out2)
	if h1 == nil || h2 == nil || h1[1] != h2[1] {
		t.Errorf("two runs of seed 3 hash %v and %v", h1, h2)
	}
	if st, err := os.Stat(trace); err != nil || st.Size() == 0 {
		t.Errorf("trace file: %v", err)
	}
}

func TestSimSweepShardsAndReplay(t *testing.T) {
	dir := t.TempDir()
	out, err := lockstep(t, "sim", "sweep", "--scenario", "termination", "--seeds", "1..4", "--shard", "1/2",
		"--steps", "3", "--parallel", "2", "--out", dir)
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, out)
	}
	if !strings.Contains(out, "2 seeds, 0 failed") {
		t.Errorf("shard 1/2 of 1..4 should run 2 seeds:\n%s", out)
	}
	// A record replays with the same hash.
	sc, _ := scenarios.Lookup("termination")
	sc.Steps = 3
	plan := scenarios.Generate(sc, 2, scenarios.SeededDrawer(2))
	res := scenarios.Execute(plan, scenarios.Options{})
	path := filepath.Join(dir, "r.json")
	if err := writeRecord(path, newRecord(res)); err != nil {
		t.Fatal(err)
	}
	out, err = lockstep(t, "sim", "replay", path)
	if err != nil || !strings.Contains(out, "trace hash identical to the recorded "+res.Hash) {
		t.Errorf("replay: %v\n%s", err, out)
	}
}

func TestShardSeedsCoverTheRangeOnce(t *testing.T) {
	seen := map[uint64]int{}
	for i := range 3 {
		for _, s := range shardSeeds(10, 20, i, 3) {
			seen[s]++
		}
	}
	for s := uint64(10); s <= 20; s++ {
		if seen[s] != 1 {
			t.Errorf("seed %d run by %d shards", s, seen[s])
		}
	}
}

func TestSimMergeReportsEveryShard(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for i, dir := range []string{a, b} {
		r := record{Scenario: "mixed", Seed: uint64(10 + i), Version: version, Failure: "one-instance",
			Violations: []string{"one-instance at +1s: two"}, Replay: "go run ./cmd/lockstep sim run --seed x"}
		if err := writeRecord(filepath.Join(dir, "f.json"), r); err != nil {
			t.Fatal(err)
		}
	}
	out, err := lockstep(t, "sim", "merge", a, b)
	if !errors.Is(err, errFailed) {
		t.Errorf("merge of failures returned %v", err)
	}
	for _, want := range []string{"2 failure records", "one-instance:", "mixed seed 10", "mixed seed 11", "replay: go run"} {
		if !strings.Contains(out, want) {
			t.Errorf("merge report has no %q:\n%s", want, out)
		}
	}
}

func TestSimRunHTMLTimeline(t *testing.T) {
	page := filepath.Join(t.TempDir(), "t.html")
	if out, err := lockstep(t, "sim", "run", "--scenario", "termination", "--seed", "4", "--steps", "4", "--html", page); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{`"lanes"`, `default/p`, "<ol start=\"0\">"} {
		if !strings.Contains(html, want) {
			t.Errorf("timeline has no %q", want)
		}
	}
	if regexp.MustCompile(`(src|href)=["']?(https?:)?//`).MatchString(html) {
		t.Errorf("timeline fetches from the network")
	}
}

// A binary built with a regression-variant tag never runs a node.
func TestNodeRefusesARegressionBuild(t *testing.T) {
	if err := refuseRegressionBuild(nil); err != nil {
		t.Errorf("a normal build is refused: %v", err)
	}
	err := refuseRegressionBuild([]string{"regress_94829"})
	if err == nil || !strings.Contains(err.Error(), "-tags regress_94829") {
		t.Errorf("a regress_94829 build is not refused: %v", err)
	}
}

// A sweep of several scenarios, swarm-drawn, runs each at every seed and
// tallies them; the same seed draws the same swarm plan twice.
func TestSimSweepScenariosSwarm(t *testing.T) {
	dir := t.TempDir()
	out, err := lockstep(t, "sim", "sweep", "--scenario", "termination,images", "--swarm", "--seeds", "1..2",
		"--steps", "2", "--parallel", "2", "--out", dir)
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, out)
	}
	for _, want := range []string{"x 2 scenarios, swarm-drawn", "termination           2 seeds    0 failed", "images                2 seeds    0 failed", "4 seeds, 0 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("sweep output has no %q:\n%s", want, out)
		}
	}
	if _, err := lockstep(t, "sim", "sweep", "--scenario", "termination,nosuch", "--seeds", "1"); err == nil || !strings.Contains(err.Error(), `unknown scenario "nosuch"`) {
		t.Errorf("an unknown scenario in the list: %v", err)
	}
}

// A failing seed's record is on disk, unshrunk, before shrinking starts;
// once shrunk, the record holds the shrunk plan and the unshrunk one.
func TestSweepSavesUnshrunkRecordFirst(t *testing.T) {
	dir := t.TempDir()
	sc, err := scenarios.Lookup("crash-restart")
	if err != nil {
		t.Fatal(err)
	}
	sc.Steps = 6
	path := filepath.Join(dir, "crash-restart-5.json")
	runs := 0
	var first *record
	fails := func(p scenarios.Plan) scenarios.Result {
		runs++
		if runs == 2 { // the first run of shrinking
			r, err := readRecord(path)
			if err != nil {
				t.Errorf("no record on disk when shrinking starts: %v", err)
			}
			first = &r
		}
		// fails while the plan still has its first action
		if len(p.Actions) > 0 && p.Actions[0] == sc6(t, sc).Actions[0] {
			return scenarios.Result{Plan: p, Violations: []scenarios.Violation{{Invariant: "one-instance"}}}
		}
		return scenarios.Result{Plan: p}
	}
	rec, bad, _ := sweepOne(sc, 5, sweepOptions{out: dir, shrink: 50, execute: fails})
	if !bad {
		t.Fatal("seed not reported failed")
	}
	if first == nil || len(first.Plan.Actions) != 6 || first.Unshrunk != nil {
		t.Fatalf("record before shrinking: %+v", first)
	}
	saved, err := readRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Plan.Actions) != 1 || saved.Unshrunk == nil || len(saved.Unshrunk.Actions) != 6 || len(rec.Plan.Actions) != 1 {
		t.Errorf("record after shrinking: %d actions, unshrunk %v", len(saved.Plan.Actions), saved.Unshrunk)
	}
}

// sc6 is the plan sweepOne draws for sc at seed 5.
func sc6(t *testing.T, sc scenarios.Scenario) scenarios.Plan {
	t.Helper()
	return scenarios.Generate(sc, 5, scenarios.SeededDrawer(5))
}

// The records a sweep prints with --print-records are read back by merge
// from the saved output (as kubectl logs of a shard's pod keeps it),
// beside a record file.
func TestSimMergeReadsRecordLinesOfLogs(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	log.WriteString("sweep termination: 4 seeds\nFAIL termination seed 3: grace-honoured\n")
	printRecordLine(&log, record{Scenario: "termination", Seed: 3, Failure: "grace-honoured", Replay: "go run -tags x ./cmd/lockstep sim run --seed 3"})
	log.WriteString("[####] 4/4 seeds\n2026-12-07T02:00:00Z ")
	printRecordLine(&log, record{Scenario: "termination", Seed: 4, Failure: "grace-honoured", Replay: "go run ./cmd/lockstep sim run --seed 4"})
	if err := os.WriteFile(filepath.Join(dir, "shard-0.log"), log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "one.json")
	if err := writeRecord(file, record{Scenario: "mixed", Seed: 9, Failure: "one-instance"}); err != nil {
		t.Fatal(err)
	}
	out, err := lockstep(t, "sim", "merge", filepath.Join(dir, "shard-0.log"), file)
	if !errors.Is(err, errFailed) {
		t.Errorf("merge of failures returned %v", err)
	}
	for _, want := range []string{"3 failure records from 2 paths", "grace-honoured:", "termination seed 3", "termination seed 4", "mixed seed 9"} {
		if !strings.Contains(out, want) {
			t.Errorf("merge report has no %q:\n%s", want, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.log"), []byte(recordLinePrefix+"{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := lockstep(t, "sim", "merge", filepath.Join(dir, "bad.log")); err == nil || !strings.Contains(err.Error(), "bad.log:1") {
		t.Errorf("a broken record line: %v", err)
	}
}
