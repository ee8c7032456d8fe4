package scenarios

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/node/regress"
)

// Action is one step of a plan: an operation with its drawn arguments (how
// each is read is the operation's business; out-of-range values are
// reduced, so any list of actions is a valid plan), then RunMS
// milliseconds of virtual time with the invariants checked every 100 ms.
type Action struct {
	Op    string `json:"op"`
	Args  [3]int `json:"args"`
	RunMS int    `json:"runMs"`
}

// String is the action's compact form, op:a,b,c@ms.
func (a Action) String() string {
	return fmt.Sprintf("%s:%d,%d,%d@%d", a.Op, a.Args[0], a.Args[1], a.Args[2], a.RunMS)
}

// ParseAction reads an action's compact form.
func ParseAction(s string) (Action, error) {
	op, rest, ok := strings.Cut(s, ":")
	args, run, ok2 := strings.Cut(rest, "@")
	parts := strings.Split(args, ",")
	if !ok || !ok2 || len(parts) != 3 {
		return Action{}, fmt.Errorf("action %q: want op:a,b,c@ms", s)
	}
	if _, known := Ops()[op]; !known {
		return Action{}, fmt.Errorf("action %q: unknown operation %q", s, op)
	}
	a := Action{Op: op}
	var err error
	for i, p := range parts {
		if a.Args[i], err = strconv.Atoi(p); err != nil {
			return Action{}, fmt.Errorf("action %q: argument %d: %w", s, i, err)
		}
	}
	if a.RunMS, err = strconv.Atoi(run); err != nil || a.RunMS < 0 {
		return Action{}, fmt.Errorf("action %q: run time %q is not a count of milliseconds", s, run)
	}
	return a, nil
}

// Plan is one run of a scenario: the kernel's seed, the pods created
// before the first action and the actions. It replays exactly: the same
// plan and binary give the same trace hash.
type Plan struct {
	Scenario string   `json:"scenario"`
	Seed     uint64   `json:"seed"`
	Pods     int      `json:"pods,omitempty"`
	Actions  []Action `json:"actions"`
	// Swarm, when the plan was drawn from a swarm variant of its scenario
	// (see Swarm), is that variant's mix (MixString); the plan replays
	// from its actions alone, this says where they came from.
	Swarm string `json:"swarm,omitempty"`
	// Faults turns the agent's fault points on, which and at what rate
	// drawn from the seed (harness.DrawFaults of FaultSeed): plans drawn
	// by Generate have them; a plan written by hand (or recorded before
	// fault points) runs without, as it always did.
	Faults bool `json:"faults,omitempty"`
}

// ActionList is the plan's actions in compact form, separated by ';'.
func (p Plan) ActionList() string {
	parts := make([]string, len(p.Actions))
	for i, a := range p.Actions {
		parts[i] = a.String()
	}
	return strings.Join(parts, ";")
}

// ParseActions reads a ';'-separated action list.
func ParseActions(s string) ([]Action, error) {
	var out []Action
	for _, part := range strings.Split(s, ";") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		a, err := ParseAction(part)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// ReplayCommand is the one command that replays the plan.
func (p Plan) ReplayCommand() string {
	pods := ""
	if p.Pods > 0 {
		pods = fmt.Sprintf(" --pods %d", p.Pods)
	}
	tags := ""
	if t := regress.Tags(); len(t) > 0 {
		tags = " -tags " + strings.Join(t, ",") // the same deliberately broken build
	}
	faults := ""
	if p.Faults {
		faults = " --faults"
	}
	return fmt.Sprintf("go run%s ./cmd/lockstep sim run --scenario %s --seed %d%s%s --plan '%s'", tags, p.Scenario, p.Seed, pods, faults, p.ActionList())
}

// Shrink makes a failing plan smaller: it drops actions one at a time,
// then shortens run times, keeping each change after which the run still
// fails the same way (same invariant or failure kind). It spends at most
// budget runs.
func Shrink(p Plan, budget int, run func(Plan) Result) (Plan, Result) {
	return ShrinkUntil(p, budget, nil, run)
}

// ShrinkUntil is Shrink that also stops trying once stop reports true
// (a sweep's bound on the wall time shrinking may take); the plan and
// result are the smallest failing ones found by then. stop may be nil.
func ShrinkUntil(p Plan, budget int, stop func() bool, run func(Plan) Result) (Plan, Result) {
	best := run(p)
	want := best.FailureName()
	if want == "" {
		return p, best
	}
	try := func(q Plan) bool {
		if budget <= 0 || (stop != nil && stop()) {
			return false
		}
		budget--
		r := run(q)
		if r.FailureName() != want {
			return false
		}
		p, best = q, r
		return true
	}
	for changed := true; changed && budget > 0 && (stop == nil || !stop()); {
		changed = false
		for i := len(p.Actions) - 1; i >= 0 && i < len(p.Actions); i-- {
			q := p
			q.Actions = append(append([]Action(nil), p.Actions[:i]...), p.Actions[i+1:]...)
			if try(q) {
				changed = true
			}
		}
		for i := range p.Actions {
			if p.Actions[i].RunMS <= 100 {
				continue
			}
			q := p
			q.Actions = append([]Action(nil), p.Actions...)
			q.Actions[i].RunMS = max(100, q.Actions[i].RunMS/2)
			if try(q) {
				changed = true
			}
		}
		if p.Pods > 0 {
			q := p
			q.Pods /= 2
			if try(q) {
				changed = true
			}
		}
	}
	return p, best
}
