package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Verdict is what the judges said of one mutant.
type Verdict string

// The verdicts. A timeout counts as a kill in the score (the mutant made
// the suite hang or crawl) but is reported apart.
const (
	Unviable          Verdict = "unviable" // it does not compile: not a mutant, left out of the score
	KilledByUnit      Verdict = "killed-by-unit"
	KilledByScenarios Verdict = "killed-by-scenarios"
	TimedOut          Verdict = "timed-out"
	Survived          Verdict = "survived"
	NotRun            Verdict = "not-run" // out of time
)

// Result is one judged mutant: the verdict of each judge that ran (the
// package's unit tests, the scenario suite) and how long it took.
type Result struct {
	Mutant
	Verdict   Verdict
	Unit      Verdict // "" if the unit judge did not run
	Scenarios Verdict // "" if the scenario judge did not run
	Took      time.Duration
}

// overlay is the JSON file `go build -overlay` reads: each source path it
// names is read from the replacement file instead.
type overlay struct {
	Replace map[string]string
}

// WriteOverlay writes the mutated source of file (an absolute path) into
// dir, and beside it the overlay file that replaces file by it; it returns
// the overlay file's path. The worktree is never written.
func WriteOverlay(dir, file string, mutated []byte) (string, error) {
	repl := filepath.Join(dir, filepath.Base(file))
	if err := os.WriteFile(repl, mutated, 0o644); err != nil {
		return "", err
	}
	b, err := json.Marshal(overlay{Replace: map[string]string{file: repl}})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "overlay.json")
	return path, os.WriteFile(path, b, 0o644)
}

// Judge runs the judges of a mutant: `go build` (a mutant that does not
// compile is unviable), the package's unit tests and the scenario suite.
type Judge struct {
	Go        string        // the go command
	Root      string        // the module root
	Mode      string        // "unit+scenarios", "scenarios" or "both"
	Run       string        // -run pattern of the scenario suite
	Checks    int           // rapid plans per property
	UnitLimit time.Duration // timeout of the unit judge
	ScenLimit time.Duration // timeout of the scenario judge
}

// outcome of one go command.
type outcome int

const (
	passed outcome = iota
	failed
	buildFailed
	timedOut
)

func (j Judge) goCmd(ctx context.Context, limit time.Duration, args ...string) (outcome, string) {
	ctx, cancel := context.WithTimeout(ctx, limit+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.Go, args...)
	cmd.Dir = j.Root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := out.String()
	switch {
	case err == nil:
		return passed, text
	case errors.Is(ctx.Err(), context.DeadlineExceeded), strings.Contains(text, "panic: test timed out"):
		return timedOut, text
	case strings.Contains(text, "[build failed]"), strings.Contains(text, "[setup failed]"):
		return buildFailed, text
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return failed, text
	}
	return buildFailed, text + err.Error()
}

// build compiles the mutated package alone: cheap, and it tells an
// unviable mutant from a killed one.
func (j Judge) build(ctx context.Context, ov, pkg string) (outcome, string) {
	return j.goCmd(ctx, 5*time.Minute, "build", "-overlay", ov, "./"+pkg+"/")
}

func (j Judge) unit(ctx context.Context, ov, pkg string) (outcome, string) {
	return j.goCmd(ctx, j.UnitLimit, "test", "-overlay", ov, "-count=1", "-vet=off", "-failfast",
		"-timeout", j.UnitLimit.String(), "./"+pkg+"/")
}

func (j Judge) scenarios(ctx context.Context, ov string) (outcome, string) {
	return j.goCmd(ctx, j.ScenLimit, "test", "-overlay", ov, "-count=1", "-vet=off", "-failfast",
		"-timeout", j.ScenLimit.String(), "-run", j.Run, "./scenarios/",
		fmt.Sprintf("-rapid.checks=%d", j.Checks))
}

func verdictOf(o outcome, kill Verdict) Verdict {
	switch o {
	case passed:
		return Survived
	case timedOut:
		return TimedOut
	case buildFailed:
		return Unviable
	}
	return kill
}

// Baseline runs the judges on the unmutated tree: they must pass, or
// every mutant would look killed.
func (j Judge) Baseline(ctx context.Context, pkg, dir string) error {
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, []byte(`{"Replace":{}}`), 0o644); err != nil {
		return err
	}
	if j.Mode != "scenarios" {
		if o, out := j.unit(ctx, ov, pkg); o != passed {
			return fmt.Errorf("unit tests of %s fail without a mutant:\n%s", pkg, tail(out))
		}
	}
	if o, out := j.scenarios(ctx, ov); o != passed {
		return fmt.Errorf("scenario suite fails without a mutant:\n%s", tail(out))
	}
	return nil
}

// Judge applies m in an overlay under dir and runs the judges of the
// mode: unit+scenarios stops at the first kill; scenarios runs the
// scenario suite only; both runs each judge whatever the other said, so
// that a report can tell what each one catches.
func (j Judge) Judge(ctx context.Context, m Mutant, dir string) (Result, string) {
	start := time.Now()
	res := Result{Mutant: m}
	src, err := os.ReadFile(filepath.Join(j.Root, m.File))
	if err == nil {
		var mutated []byte
		if mutated, err = Apply(m, src); err == nil {
			var ov string
			if ov, err = WriteOverlay(dir, filepath.Join(j.Root, m.File), mutated); err == nil {
				var log string
				res, log = j.judge(ctx, res, ov)
				res.Took = time.Since(start)
				return res, log
			}
		}
	}
	res.Verdict, res.Took = Unviable, time.Since(start)
	return res, err.Error()
}

func (j Judge) judge(ctx context.Context, res Result, ov string) (Result, string) {
	if o, out := j.build(ctx, ov, res.Pkg); o != passed {
		res.Verdict = Unviable
		return res, out
	}
	var log string
	if j.Mode != "scenarios" {
		o, out := j.unit(ctx, ov, res.Pkg)
		res.Unit, log = verdictOf(o, KilledByUnit), out
		if res.Unit == Unviable { // the package's tests do not compile with it
			res.Verdict = Unviable
			return res, log
		}
		if res.Unit != Survived && j.Mode == "unit+scenarios" {
			res.Verdict = res.Unit
			return res, log
		}
	}
	o, out := j.scenarios(ctx, ov)
	res.Scenarios = verdictOf(o, KilledByScenarios)
	log += out
	switch {
	case res.Scenarios == Unviable:
		res.Verdict = Unviable
	case res.Unit == KilledByUnit || res.Unit == TimedOut:
		res.Verdict = res.Unit
	default:
		res.Verdict = res.Scenarios
	}
	return res, log
}

// tail is the last lines of a command's output.
func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}
