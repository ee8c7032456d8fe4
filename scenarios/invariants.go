package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// Violation is a broken invariant, named as in the project's invariants
// note, with when and what.
type Violation struct {
	Invariant string
	At        time.Duration
	Detail    string
}

func (v Violation) String() string { return fmt.Sprintf("%s at +%v: %s", v.Invariant, v.At, v.Detail) }

// Checker watches a simulated node and records every safety violation it
// sees: the runtime after each step it is asked to check, and every status
// the apiserver commits.
type Checker struct {
	h          *harness.Harness
	violations []Violation
	// instances: distinct container IDs ever seen per pod UID/container.
	instances map[string]map[string]bool
	policy    map[types.UID]corev1.RestartPolicy
	lastPhase map[types.UID]corev1.PodPhase
	// terminalWrites are the agent's status writes that moved a pod to a
	// terminal phase since the last check (terminal-after-stopped).
	terminalWrites map[types.UID]terminalWrite
	// sandbox: sandbox-reported's claims and the sandboxes' creations.
	sandbox sandboxState
	// features: features-declared's pods (invariants_features.go).
	features featureState
	// appArmor: apparmor-refused's pods (invariants_apparmor.go).
	appArmor appArmorState
	// fqdn: fqdn-too-long's pods (invariants_fqdn.go).
	fqdn     fqdnState
	restarts map[string]int32
	ctr      *containerChecks // see invariants_containers.go
	term     *terminationState
	suite    *suiteState // see invariants_suite.go
	// volumesReported: volume losses already reported (invariants_volumes.go).
	volumesReported map[string]bool
	probes          *probeChecks        // see invariants_probes.go
	vs              *volStatusChecks    // see invariants_volstatus.go
	sidecars        *sidecarChecks      // see invariants_sidecars.go
	pulls           *pullChecks         // see invariants_images.go
	imagegc         *imageGCChecks      // see invariants_imagegc.go
	logs            *logChecks          // see invariants_logs.go
	ready           nodeReadyState      // see invariants_node.go
	hooks           *hookChecks         // see invariants_hooks.go
	prestop         *preStopChecks      // see invariants_prestop.go
	cg              *cgroupChecks       // see invariants_cgroups.go
	cpus            *cpuChecks          // see invariants_cpus.go
	pressure        *pressureChecks     // see invariants_pressure.go
	storage         *localStorageChecks // see invariants_localstorage.go
	ooms            map[string]*oomKill // by container ID, see invariants_oom.go
	shutdown        *shutdownChecks     // see shutdown.go
	rz              *resizeChecks       // see resize.go
	dv              *deviceChecks       // see invariants_devices.go
	bo              *backoffChecks      // see invariants_backoff.go
	svc             *serviceChecks      // see invariants_services.go
	prompt          *promptChecks       // see invariants_prompt.go
	stc             *staticChecks       // see invariants_static.go
	propagation     *propagationChecks  // see invariants_propagation.go
	reportedOnce    map[string]bool     // see failOnce
	snap            *truthSnap          // see truth.go
	sched           schedule            // see schedule.go
	// apiGen counts the apiserver's committed writes (inputs.api);
	// nodes are the API's nodes as of nodesGen (apiNodes).
	apiGen   uint64
	nodes    []*corev1.Node
	nodesGen uint64
	// tokensExpire: the earliest expiry of the tokens token-valid last
	// found valid (zero: none), when it must look again.
	tokensExpire time.Time
	// Exhaustive runs every invariant family at every check, as before
	// the schedule (for tests that compare both).
	Exhaustive bool
	// statsChecked is the time of the last stats sample checked (stats.go).
	statsChecked time.Time
}

// NewChecker starts checking h's apiserver writes at once; call Check to
// check the runtime.
func NewChecker(h *harness.Harness) *Checker {
	c := &Checker{h: h, instances: map[string]map[string]bool{}, policy: map[types.UID]corev1.RestartPolicy{},
		lastPhase: map[types.UID]corev1.PodPhase{}, restarts: map[string]int32{}, sandbox: newSandboxState(), features: newFeatureState(), appArmor: newAppArmorState(), fqdn: newFQDNState(), term: newTerminationState(), suite: newSuiteState(),
		probes: newProbeChecks(), sidecars: newSidecarChecks(),
		hooks: newHookChecks(), prestop: newPreStopChecks(), cg: newCgroupChecks(), cpus: newCPUChecks(),
		pressure: newPressureChecks(), storage: newLocalStorageChecks(), imagegc: newImageGCChecks(), ooms: map[string]*oomKill{}, rz: newResizeChecks(), dv: newDeviceChecks(), prompt: newPromptChecks(),
		stc: newStaticChecks(), propagation: newPropagationChecks()}
	c.svc = newServiceChecks(c)
	h.API.OnWrite(c.onWrite)
	h.OnStopContainer(c.onShutdownStop)
	return c
}

func (c *Checker) fail(inv, format string, args ...any) {
	c.violations = append(c.violations, Violation{inv, c.h.K.Elapsed(), fmt.Sprintf(format, args...)})
}

// Violations returns what was seen so far.
func (c *Checker) Violations() []Violation { return c.violations }

// Check inspects the runtime's true state: every invariant family that
// reads it, each only when what it reads changed since it last ran or a
// deadline of its came (schedule.go, and docs/checker.md "When
// invariants are evaluated"); Exhaustive runs every family every time.
func (c *Checker) Check() {
	c.sched.in = c.inputsNow()
	c.checkContainers()
	c.checkBackoff()
	truth := c.truth().containers
	c.checkSuite(truth)
	if c.due("service-env", readsRuntime, false) {
		c.checkServiceEnv(truth)
	}
	c.checkNodeReady()
	if c.due("termination", readsRuntime|readsAPI|readsAgent, c.graceDeadlinePassed(), c.suite.runtimeImpaired) {
		c.checkTermination(truth)
	}
	c.trackAgent()
	if c.due("static", readsRuntime|readsAgent, c.staticDeadlinePassed(), c.suite.runtimeImpaired) {
		c.checkStaticRemovals(truth)
		c.checkStaticSuperseded()
	}
	if c.due("volumes", readsRuntime|readsFiles, false) {
		c.checkVolumes(truth)
	}
	if c.due("propagation", readsRuntime, false) {
		c.checkPropagation(truth)
	}
	if c.due("tokens", readsRuntime|readsAPI|readsFiles, c.tokenExpired()) {
		c.tokensExpire = time.Time{}
		c.checkTokens(truth)
	}
	c.evaluate("probes") // endpoints' health moves with time
	c.checkProbes(truth)
	c.evaluate("volstatus") // its bound moves with time
	c.checkVolStatus()
	if c.due("sidecars", readsRuntime, false) {
		c.checkSidecarOrder()
	}
	c.evaluate("terminal") // judges the writes since the last check
	c.checkTerminalAfterStopped()
	c.evaluate("pulls")
	c.checkPulls()
	c.evaluate("imagegc") // last use is stamped with the time
	c.checkImageGC()
	c.checkLogs()
	if c.due("hooks", readsRuntime|readsAPI|readsAgent, false, c.suite.runtimeImpaired) {
		c.checkHooks(truth)
	}
	c.notePreStopAgent()
	if c.due("prestop", readsRuntime|readsAPI|readsAgent, false, c.suite.runtimeImpaired) {
		c.checkPreStopAbandoned(truth)
	}
	if c.sidecarKillsPending() {
		c.evaluate("sidecar-stops")
		c.checkSidecarsStopTogether()
	}
	c.checkCgroups()
	c.evaluate("cpus")
	c.checkCPUs(truth)
	c.evaluate("numa")
	c.checkNUMA(truth)
	c.checkPressure(truth)
	c.checkLocalStorage()
	c.checkOOM(truth)
	c.evaluate("shutdown")
	c.checkShutdown()
	if c.due("resize", readsRuntime|readsAPI, false, durOf(c.allocationsGen())) {
		c.checkResize(truth)
	}
	c.evaluate("devices")
	c.checkDevices(truth)
	c.evaluate("stats-rate")
	c.checkStatsRate()
	c.evaluate("status-prompt")
	c.checkStatusPrompt(truth)
	c.checkSandboxReported()
	c.checkFeaturesDeclared()
	c.checkAppArmorRefused()
	c.checkFQDNTooLong()
	if !c.due("instances", readsRuntime|readsAPI, false) {
		return
	}
	running := map[string][]string{}
	for _, ct := range truth {
		key := string(ct.PodUID) + "/" + ct.Name
		if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running[key] = append(running[key], ct.ID)
		}
		if c.instances[key] == nil {
			c.instances[key] = map[string]bool{}
		}
		if ct.State != runtimeapi.ContainerState_CONTAINER_CREATED {
			c.instances[key][ct.ID] = true
		}
		if len(c.instances[key]) > 1 && c.runsOnce(ct.PodUID, ct.Name) {
			c.fail("never-restart", "container %s, which may not run again (restart policies: pod %s), ran as %d instances",
				key, c.policy[ct.PodUID], len(c.instances[key]))
			c.instances[key] = map[string]bool{ct.ID: true} // report once
		}
	}
	for _, key := range slices.Sorted(maps.Keys(running)) {
		if ids := running[key]; len(ids) > 1 {
			c.fail("one-instance", "container %s has %d running instances: %v", key, len(ids), ids)
		}
	}
}

// pendingAgain reports whether p's status is one upstream's getPhase
// (kubelet_pods.go) calls Pending although the pod ran: no regular
// container running and one waiting with no terminated last state. The
// kubelet writes that when a container's two newest instances never ran
// (two StartContainer failures in a row: the second-newest one's Waiting
// state becomes lastState), so Running → Pending is legal then, and only
// then.
func pendingAgain(p *corev1.Pod) bool {
	waiting := false
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Running != nil:
			return false
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil:
			waiting = true
		}
	}
	return waiting
}

// onWrite checks pod statuses as the apiserver commits them.
func (c *Checker) onWrite(r apiserver.Record) {
	c.apiGen++
	c.evaluate("on-write")
	c.onWritePressure(r)
	c.onWriteOOM(r)
	c.onWriteDeviceNode(r)
	if r.Kind != apiserver.KindPod || r.Pod == nil {
		return
	}
	c.onWriteTermination(r)
	c.onWriteSuite(r)
	c.onWriteProbes(r)
	c.onWriteVolStatus(r)
	c.onWriteHooks(r)
	c.onWritePreStop(r)
	c.onWriteCgroups(r)
	c.onWriteResize(r)
	c.onWriteDevices(r)
	c.onWriteSandbox(r)
	c.onWriteFeatures(r)
	c.onWritePropagation(r)
	c.onWriteAppArmor(r)
	c.onWriteFQDN(r)
	c.onWriteMirror(r)
	c.onWriteTerminal(r)
	p := r.Pod
	c.policy[p.UID] = p.Spec.RestartPolicy
	prev, seen := c.lastPhase[p.UID]
	now := p.Status.Phase
	if seen && prev != now {
		legal := map[corev1.PodPhase][]corev1.PodPhase{
			corev1.PodPending: {corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed},
			corev1.PodRunning: {corev1.PodSucceeded, corev1.PodFailed},
		}
		if prev == corev1.PodSucceeded || prev == corev1.PodFailed {
			c.fail("terminal-is-final", "pod %s/%s went %s → %s", p.Namespace, p.Name, prev, now)
		} else if now != "" && !slices.Contains(legal[prev], now) && !(prev == corev1.PodRunning && now == corev1.PodPending && pendingAgain(p)) {
			c.fail("legal-phases", "pod %s/%s went %s → %s", p.Namespace, p.Name, prev, now)
		}
	}
	if now != "" {
		c.lastPhase[p.UID] = now
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		key := string(p.UID) + "/" + cs.Name
		if old, ok := c.restarts[key]; ok && cs.RestartCount < old {
			c.fail("restart-count-monotone", "container %s restartCount %d → %d", key, old, cs.RestartCount)
		}
		c.restarts[key] = cs.RestartCount
	}
	if IsReady(p) {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil || !cs.Ready {
				c.fail("ready-is-true", "pod %s/%s Ready while container %s is not running and ready", p.Namespace, p.Name, cs.Name)
			}
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			c.fail("ready-is-true", "terminal pod %s/%s reports Ready", p.Namespace, p.Name)
		}
	}
}

// RunChecked runs h for d in steps of slice, checking after each.
func RunChecked(h *harness.Harness, c *Checker, d, slice time.Duration) error {
	for end := h.K.Elapsed() + d; h.K.Elapsed() < end; {
		if err := h.K.RunFor(min(slice, end-h.K.Elapsed())); err != nil {
			return err
		}
		c.Check()
	}
	return nil
}

// failOnce reports a violation of inv once per key (the resize and
// devices checks, which see the same state at every step).
func (c *Checker) failOnce(inv, key, format string, args ...any) {
	if c.reportedOnce == nil {
		c.reportedOnce = map[string]bool{}
	}
	if c.reportedOnce[inv+" "+key] {
		return
	}
	c.reportedOnce[inv+" "+key] = true
	c.fail(inv, format, args...)
}
