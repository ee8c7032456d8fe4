package scenarios

import (
	"fmt"
	"io"
	corev1 "k8s.io/api/core/v1"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/harness"
	"github.com/lockstep-dev/lockstep/sim/trace"
)

// Options tune how a plan runs; none of them changes its behaviour.
type Options struct {
	// Trace receives the trace as JSON lines (nil: hash only).
	Trace io.Writer
	// Settle is the healed time at the end (default 3 minutes).
	Settle time.Duration
	// Exhaustive evaluates every invariant at every check instead of
	// when what it reads changed (Checker.Exhaustive): slower, with the
	// same verdicts.
	Exhaustive bool
	// Evaluated, when set, receives the checker's evaluation counts at
	// the end (Checker.Evaluated).
	Evaluated func(map[string]int)
}

// Result is what one run of a plan showed.
type Result struct {
	Plan Plan
	// Violations are the broken invariants, safety and liveness, in order.
	Violations []Violation
	// Err is a simulation failure (deadlock, panic, budget) or a driver
	// error, nil if the run completed.
	Err error
	// Hash and Events fingerprint the run's trace.
	Hash   string
	Events uint64
	// Elapsed is the virtual time simulated; Steps the scheduling steps.
	Elapsed time.Duration
	Steps   uint64
	// Restarts counts agent starts.
	Restarts int
	// FaultsFired is how many times each of the agent's fault points
	// fired, by name (nil when the plan has no fault points).
	FaultsFired map[string]int
	// Evaluated is how many times each invariant was evaluated, by name
	// (nil while the checker does not count them; see evaluated).
	Evaluated map[string]int
}

// Failed reports whether the run broke an invariant or failed.
func (r Result) Failed() bool { return r.Err != nil || len(r.Violations) > 0 }

// FailureName is the first broken invariant's name, "sim" for a
// simulation failure, "" when the run passed.
func (r Result) FailureName() string {
	switch {
	case len(r.Violations) > 0:
		return r.Violations[0].Invariant
	case r.Err != nil:
		return "sim"
	}
	return ""
}

// Report is the failure report: what broke, then the one command that
// replays the run.
func (r Result) Report() string {
	s := fmt.Sprintf("scenario %s seed %d failed after %d actions (trace hash %s):\n", r.Plan.Scenario, r.Plan.Seed, len(r.Plan.Actions), r.Hash)
	for _, v := range r.Violations {
		s += "  " + v.String() + "\n"
	}
	if r.Err != nil {
		s += "  " + r.Err.Error() + "\n"
	}
	return s + "  replay: " + r.Plan.ReplayCommand()
}

// run is one plan being executed.
type run struct {
	h           *harness.Harness
	c           *Checker
	created     []string
	deleted     map[string]bool
	manifests   map[string]int // the version written last, by name
	manifestDir string
	step        int
	stalls      int
	configs     bool // the volume pods' objects exist
}

// Execute runs plan against a fresh simulated node: its pods, then each
// action followed by its run time with the safety invariants checked every
// 100 ms; then every fault heals, the world settles and the liveness
// invariants are checked.
func Execute(plan Plan, o Options) Result {
	res := Result{Plan: plan}
	hc := harness.Config{Seed: plan.Seed, Trace: o.Trace, Replay: func(uint64) string { return plan.ReplayCommand() },
		Runtime: fakecri.Config{Registry: propertyRegistry()}}
	if plan.Faults {
		hc.Faults = harness.DrawFaults(FaultSeed(plan.Seed))
	}
	sc, lookupErr := Lookup(plan.Scenario)
	if lookupErr == nil && sc.Configure != nil {
		sc.Configure(&hc)
	}
	h := harness.New(hc)
	defer h.Close()
	putPullSecret(h)
	if lookupErr == nil && sc.Setup != nil {
		sc.Setup(h)
	}
	h.StartAgent()
	r := &run{h: h, c: NewChecker(h), deleted: map[string]bool{}, manifests: map[string]int{}, manifestDir: "/etc/kubernetes/manifests"}
	r.c.Exhaustive = o.Exhaustive
	h.OnFaultPoint(func(p deps.Point) { excuseFaultPoint(r.c, p) })
	res.Err = r.execute(plan, o)
	if res.Err == nil {
		res.Err = r.settleStatuses()
	}
	res.Violations = r.c.Violations()
	if res.Err == nil {
		res.Violations = append(res.Violations, r.liveness()...)
	}
	for _, v := range res.Violations {
		h.K.Record("violation", trace.F("invariant", v.Invariant), trace.F("detail", v.Detail))
	}
	if o.Evaluated != nil {
		o.Evaluated(r.c.Evaluated())
	}
	res.Hash, res.Events = h.K.Trace().Hash(), h.K.Trace().Events()
	res.Elapsed, res.Steps, res.Restarts = h.K.Elapsed(), h.K.Steps(), h.Restarts()
	res.FaultsFired, res.Evaluated = h.FaultsFired(), r.evaluated()
	return res
}

// FaultSeed is the seed a plan's fault points are drawn from: apart from
// the plan's own draws and its swarm variant's.
func FaultSeed(seed uint64) uint64 { return seed ^ 0xb0661f_fa17 }

// evaluated is how many times each invariant was evaluated in this run,
// for `sim sweep --coverage`.
func (r *run) evaluated() map[string]int { return r.c.Evaluated() }

func (r *run) execute(plan Plan, o Options) error {
	kinds := PodKinds()
	for i := range plan.Pods {
		name := fmt.Sprintf("base%d", i)
		if _, err := Create(r.h, kinds[0](name, r.h.NodeName)); err != nil {
			return err
		}
		r.created = append(r.created, name)
	}
	ops := Ops()
	for i, a := range plan.Actions {
		r.step = i
		op, ok := ops[a.Op]
		if !ok {
			return fmt.Errorf("action %d: unknown operation %q", i, a.Op)
		}
		r.h.K.Record("action", trace.F("step", i), trace.F("action", a.String()))
		if err := op.exec(r, a.Args); err != nil {
			return fmt.Errorf("action %d (%s): %w", i, a, err)
		}
		if err := r.advance(ms(a.RunMS)); err != nil {
			return err
		}
	}
	r.heal()
	settle := o.Settle
	if settle == 0 {
		settle = 3 * time.Minute
	}
	return RunChecked(r.h, r.c, settle, time.Second)
}

// settleStatuses gives the API's statuses up to five more seconds to catch
// up with the runtime: probes go on killing containers after the world has
// healed (an endpoint's last answer lasts forever), and a kill just before
// the end is not in the status yet.
func (r *run) settleStatuses() error {
	for range 5 {
		if runningStatusesMatch(r.h) {
			return nil
		}
		if err := RunChecked(r.h, r.c, time.Second, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// runningStatusesMatch reports whether every container the API reports
// running runs.
func runningStatusesMatch(h *harness.Harness) bool {
	running := map[string]bool{}
	for _, ct := range TrueContainers(h) {
		if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running["fakecri://"+ct.ID] = true
		}
	}
	for _, p := range h.API.User().ListAllPods() {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil && !running[cs.ContainerID] {
				return false
			}
		}
	}
	return true
}

// heal ends every fault: the world must now converge.
func (r *run) heal() {
	r.h.K.Record("action", trace.F("step", "heal"))
	r.h.Runtime.ClearFaults()
	r.h.Runtime.SetRuntimeReady(true)
	r.h.Runtime.SetNetworkReady(true)
	r.h.API.ClearFaults()
	r.healDevices()
	r.c.Healed()
	if r.h.Agent() == nil {
		r.h.StartAgent()
	}
}

// advance runs the world for d, checking it every 100 ms.
func (r *run) advance(d time.Duration) error { return RunChecked(r.h, r.c, d, 100*time.Millisecond) }

// fault records an injected fault in the trace.
func (r *run) fault(name string, kv ...any) {
	fs := []trace.Field{trace.F("fault", name)}
	for i := 0; i+1 < len(kv); i += 2 {
		fs = append(fs, trace.F(fmt.Sprint(kv[i]), kv[i+1]))
	}
	r.h.K.Record("fault", fs...)
}

// crashPoints are the CRI calls of a sync an agent crash can land just
// before: before StartContainer is between CreateContainer and
// StartContainer; before RemoveContainer, between stopping and removing.
var crashPoints = []string{
	"RunPodSandbox", "PodSandboxStatus", "ImageStatus", "CreateContainer", "StartContainer",
	"StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox", "ListContainers",
}

// crashInSync crashes the agent inside a sync: the next call of method
// hangs, the agent dies while it hangs (the call never takes effect), and a
// new agent starts after downtime. If no such call comes within 30 s,
// nothing crashes.
func crashInSync(r *run, method string, downtime time.Duration) error {
	hang := r.h.Runtime.Hang(method, "")
	defer hang.Release()
	for end := r.h.K.Elapsed() + 30*time.Second; !hang.Caught() && r.h.K.Elapsed() < end; {
		if err := r.advance(100 * time.Millisecond); err != nil {
			return err
		}
	}
	if !hang.Caught() {
		return nil
	}
	r.fault("crash-in-sync", "before", method)
	r.h.CrashAgent()
	hang.Release()
	if err := r.advance(downtime); err != nil {
		return err
	}
	r.h.StartAgent()
	return nil
}

// statusLag is how long the API may still show a container running after
// it exited: the next relist (1 s) and status write.
const statusLag = 2 * time.Second

// justExited reports whether the container (a status's containerID) exited
// less than statusLag ago: a container that keeps exiting (a restarting
// OOM loop) may do so at the very instant of the final check.
func (r *run) justExited(containerID string) bool {
	exit, ok := r.h.Runtime.TrueExit(strings.TrimPrefix(containerID, "fakecri://"))
	return ok && r.h.K.Now().Sub(time.Unix(0, exit.FinishedAt)) < statusLag
}

// liveness checks the settled world: deleted-disappears, converges and
// status-matches for API pods, and for static pods exactly those whose
// manifest is present run, once each, with their mirror pods.
func (r *run) liveness() []Violation {
	r.c.evaluate("liveness")
	var out []Violation
	fail := func(inv, format string, args ...any) {
		out = append(out, Violation{inv, r.h.K.Elapsed(), fmt.Sprintf(format, args...)})
	}
	apiUIDs := map[types.UID]bool{}
	var live []*corev1.Pod
	truth := TrueContainers(r.h)
	for _, name := range r.created {
		p, ok := APIPod(r.h, "default", name)
		if r.deleted[name] {
			if ok {
				fail("deleted-disappears", "pod %s still in the API (phase %s, deletion %v)", name, p.Status.Phase, p.DeletionTimestamp)
			}
			continue
		}
		if !ok {
			fail("converges", "pod %s vanished from the API without being deleted", name)
			continue
		}
		apiUIDs[p.UID] = true
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			live = append(live, p)
		}
		running := map[string]bool{}
		for _, ct := range truth {
			if ct.PodUID == p.UID && ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				running["fakecri://"+ct.ID] = true
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil && !running[cs.ContainerID] && !r.justExited(cs.ContainerID) {
				fail("status-matches", "pod %s reports container %s running as %s, which is not running", name, cs.Name, cs.ContainerID)
			}
		}
	}
	for _, v := range r.c.resizeSettled(live, truth) {
		fail(v[0], "%s", v[1])
	}
	for _, msg := range r.c.appArmorSettled(live) {
		fail("apparmor-refused", "%s", msg)
	}
	for _, msg := range r.c.fqdnSettled(live) {
		fail("fqdn-too-long", "%s", msg)
	}
	static := staticSandboxes(r.h.Runtime.TrueSandboxes())
	for _, msg := range r.c.cgroupsSettled(live, static) {
		fail("cgroups-match", "%s", msg)
	}
	for _, ct := range truth {
		if _, ok := static[ct.PodUID]; !apiUIDs[ct.PodUID] && !ok {
			fail("converges", "container %s/%s of a pod no longer in the API is still in the runtime (%v)", ct.PodUID, ct.Name, ct.State)
		}
	}
	running, counted := map[string]int{}, map[string]bool{}
	for _, ct := range truth {
		name, ok := static[ct.PodUID]
		if !ok || ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING || counted[string(ct.PodUID)] {
			continue
		}
		counted[string(ct.PodUID)] = true
		running[name]++
	}
	want := map[string]int{}
	for name := range r.manifests {
		want["kube-system/"+name+"-"+r.h.NodeName] = 1
	}
	if !maps.Equal(want, running) {
		fail("converges", "running static pods %v, want %v (manifests %v)", running, want, slices.Sorted(maps.Keys(r.manifests)))
	}
	for _, m := range r.c.MirrorsMissing() {
		fail("mirror-present", "%s", strings.TrimPrefix(m, "mirror-present: "))
	}
	for _, m := range r.c.staticVersionsSettled() {
		fail("static-latest", "%s", m)
	}
	return out
}
