// Package runtimesync brings the runtime in line with one pod's spec.
//
// The decisions are pure. ComputeActions decides what to kill, create and
// start from the spec and the runtime's view of the pod (podstate). A Plan
// (NewPlan) turns those actions into the whole of one sync, in the shape
// of etcd raft's Ready/Advance: Next returns what to do now (the events to
// record, the container starts to report to the Observer, and the next
// call, an Op: a CRI call with its arguments), Report hands the call's
// outcome back, and the plan decides what follows from it (a failed
// sandbox makes every container wait in ContainerCreating and ends the
// sync; a failed image, config, create or start makes that container wait
// with the kubelet's reason and a Failed event; a failed postStart hook
// adds a kill of the new instance). Result then holds the waiting reasons,
// the containers started and the sandbox.
//
// The Executor only executes: Execute steps a Plan, makes each call
// through the narrow ports it declares (Runtime, Images) and reports its
// outcome, recording the plan's events; it chooses no reason, event or
// refusal. The testdata/plan transcripts show the plans: a pod, a runtime
// view and scripted outcomes in, every step out. The Executor also kills
// whole pods with a grace period (KillPod), resizes containers in place
// and collects garbage.
package runtimesync

import (
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// Inputs is everything ComputeActions looks at.
type Inputs struct {
	Pod    *corev1.Pod
	Status *podstate.PodStatus
	// Terminal: the pod's API phase is Succeeded or Failed; nothing may
	// start again.
	Terminal bool
	Now      time.Time
	// Backoff is the crash-loop back-off (keyed by BackoffKey).
	Backoff *backoff.Restarts
	// Hash hashes a container spec (the hash containers are labelled with).
	Hash func(*corev1.Container) string
	// Unhealthy reports a container instance whose liveness or startup
	// probe failed, and how to kill it; nil: none.
	Unhealthy func(containerID string) (ProbeKill, bool)
	// Started reports whether a running container instance has started:
	// its startup probe, if any, succeeded (the next init container
	// waits for a sidecar until then); nil: running means started.
	Started func(containerID string) bool
	// Node is what the node contributes to container configs (the
	// resources a resized container must run with).
	Node podspec.NodeInfo
	// Resizing: a resize of the pod was accepted; a running container
	// whose resources differ from its spec's (the allocation) and whose
	// resizePolicy asks for it is restarted.
	Resizing bool
}

// ProbeKill is the kill a failed liveness or startup probe asks for.
type ProbeKill struct {
	// Probe names the probe that failed, as the kubelet's messages do:
	// "liveness" or "startup".
	Probe string
	// Grace is the probe's own termination grace period (nil: the pod's).
	Grace *int64
}

// ContainerStart is a container to create and start.
type ContainerStart struct {
	Name string
	// Init marks an init container (sidecars included).
	Init bool
	// Ephemeral marks an ephemeral container (never restarted).
	Ephemeral bool
	// Index in the pod spec's Containers, InitContainers or
	// EphemeralContainers.
	Index int
	// RestartCount is the new instance's attempt number.
	RestartCount int
}

// ContainerKill is a container instance to stop.
type ContainerKill struct {
	ID     string
	Name   string
	Reason string
	// Message replaces the Killing event's message ("": "Stopping
	// container <name>", the kubelet's default).
	Message string
	// Grace replaces the pod's grace period (a probe's own).
	Grace *int64
	// Remove: remove the instance once stopped (one created but never
	// started: it would hold its name and attempt in the runtime forever,
	// and has no logs worth keeping).
	Remove bool
}

// Waiting says why a container is not started now.
type Waiting struct {
	Reason  string
	Message string
}

// Actions is what must happen to bring the runtime in line with the pod.
type Actions struct {
	// KillPod: stop every container and the sandbox (before re-creating
	// the sandbox, or because nothing is left to run).
	KillPod bool
	// CreateSandbox: run a new sandbox with Attempt.
	CreateSandbox bool
	Attempt       uint32
	// SandboxReason says why a (new) sandbox is needed (see
	// podstate.SandboxChange); "" when the newest one serves.
	SandboxReason string
	// SandboxID is the sandbox to start containers in (when not creating).
	SandboxID string
	// Kill lists container instances to stop first, by name.
	Kill []ContainerKill
	// Start lists containers to create and start, in order: ephemeral
	// containers, then init containers (sidecars that must run again and
	// the next one in line), then the regular containers.
	Start []ContainerStart
	// InitFailed: an init container failed and may not be retried
	// (restartPolicy Never): the pod has failed.
	InitFailed bool
	// Waiting maps container names to why they are held back.
	Waiting map[string]Waiting
	// RetryAfter is when the earliest back-off holding a container expires
	// (0: none).
	RetryAfter time.Duration
}

// BackoffKey is the crash-loop back-off key of a pod's container: the pod
// UID and container name, and a hash of the container's image and
// resources, as upstream keys it, so that fixing a crashing container's
// image (or resources) starts the fixed one without waiting out the old
// back-off. Keys start with "<pod UID>/" (ForgetPod drops them by prefix).
func BackoffKey(pod *corev1.Pod, c *corev1.Container) string {
	h := fnv.New64a()
	h.Write([]byte(c.Image))
	h.Write([]byte{0})
	h.Write([]byte(c.Resources.String()))
	return fmt.Sprintf("%s/%s/%016x", pod.UID, c.Name, h.Sum64())
}

// ComputeActions decides what to do for pod given the runtime's view of it.
// It only reads its inputs, but for the back-off, which records each
// restart it lets go (holdBackedOff; a Plan records them only when it
// attempts the start): call it once per sync.
func ComputeActions(in Inputs) Actions {
	acts := computeActions(in)
	for _, r := range holdBackedOff(in, &acts) {
		r.record(in)
	}
	return acts
}

// restart is a start after an exit that the back-off let go: it records
// it when the start is attempted, as the kubelet does (its doBackOff runs
// at each start, after the kills and the sandbox: a sync that stops
// before does not advance the back-off).
type restart struct {
	name, key string
	finished  time.Time
}

func (r restart) record(in Inputs) { in.Backoff.Next(r.key, r.finished, in.Now) }

// computeActions is ComputeActions before the crash-loop back-off.
func computeActions(in Inputs) Actions {
	pod, st := in.Pod, in.Status
	acts := Actions{Waiting: map[string]Waiting{}}
	if in.Terminal {
		// A terminal pod never runs again; stop what still runs.
		acts.KillPod = len(st.Running()) > 0 || hasReadySandbox(st)
		return acts
	}
	sb, hasSandbox := st.LatestSandbox()
	acts.SandboxReason = st.SandboxChange(pod.Spec.HostNetwork)
	switch {
	case !hasSandbox:
		acts.CreateSandbox = true
	case acts.SandboxReason != "":
		acts.CreateSandbox = true
		acts.KillPod = true
		acts.Attempt = sb.Attempt + 1
	default:
		acts.SandboxID = sb.ID
	}
	if acts.CreateSandbox {
		// A new sandbox runs only what may still run (regularToStart,
		// nextInit). A pod with nothing left gets none: one whose regular
		// containers all ran and may not run again (restartPolicy Never,
		// or OnFailure and all succeeded) is done, and its init
		// containers and sidecars would run again for nothing; so is a
		// pod that runs once whose init container ran and may not run
		// again without having succeeded (initSpent). An instance created
		// but never started has not run: a Never pod whose sandbox died
		// while it held one (StartContainer failed, the agent died
		// between create and start) runs it in a new sandbox instead of
		// staying Pending for good (upstream's kubernetes#118321).
		if initSpent(in) || len(regularToStart(in)) == 0 {
			acts.CreateSandbox, acts.Attempt, acts.SandboxReason = false, 0, ""
			acts.KillPod = len(st.Running()) > 0 || hasReadySandbox(st)
			return acts
		}
		computeFreshSandbox(in, &acts)
		return acts
	}

	staleCreatedBelowLatest(st, &acts)
	computeEphemeral(in, &acts)
	if initialized, failed := computeInit(in, &acts); failed || !initialized {
		if !failed {
			for _, c := range pod.Spec.Containers {
				if _, ok := acts.Waiting[c.Name]; !ok {
					acts.Waiting[c.Name] = Waiting{Reason: podutil.ReasonPodInitializing}
				}
			}
		}
		return acts
	}
	keep := computeRegular(in, &acts)
	// Nothing runs and nothing will: the pod is done; stop what is left
	// (sidecars, ephemeral containers) and its sandbox. Sidecars are not
	// restarted then: they do not keep a finished pod alive.
	if keep == 0 && !startsRegular(acts) && !waitsRegular(pod, acts) {
		acts.Start = nil
		acts.RetryAfter = 0
		for _, c := range pod.Spec.InitContainers {
			delete(acts.Waiting, c.Name)
		}
		acts.KillPod = len(st.Running()) > 0 || hasReadySandbox(st)
	}
	return acts
}

// computeEphemeral starts the ephemeral containers the runtime has never
// run: they run once, whatever happens to them, and need not wait for the
// pod's initialization.
func computeEphemeral(in Inputs, acts *Actions) {
	for i := range in.Pod.Spec.EphemeralContainers {
		name := in.Pod.Spec.EphemeralContainers[i].Name
		if _, ok := in.Status.Latest(name); !ok {
			acts.Start = append(acts.Start, ContainerStart{Name: name, Ephemeral: true, Index: i})
		}
	}
}

// computeInit plans the init containers of a pod whose sandbox is up. They
// run in order: a regular init container must exit 0 before the next one
// starts; a sidecar (restartable init container) must have started, and
// passed its startup probe if it has one. Once the pod has initialized
// (or a later init container ran) the sidecars before are only kept
// running: restarted after they exit, under the crash-loop back-off,
// whatever the pod's restartPolicy. It reports whether the pod has
// initialized, and whether an init container failed for good (then the
// pod is killed and InitFailed set).
func computeInit(in Inputs, acts *Actions) (initialized, failed bool) {
	pod := in.Pod
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		return true, false
	}
	frontier := initFrontier(in)
	if frontier < 0 {
		first := nextInit(in, 0)
		if first == len(inits) {
			return true, false
		}
		acts.Start = append(acts.Start, ContainerStart{Name: inits[first].Name, Init: true, Index: first, RestartCount: nextCount(in.Status, inits[first].Name)})
		return false, false
	}
	initialized = frontier == len(inits)
	for i := 0; i < len(inits) && i <= frontier; i++ {
		c := &inits[i]
		step := initStep(in, acts, c, i, i < frontier)
		switch step {
		case initFailed:
			acts.InitFailed = true
			acts.KillPod = len(in.Status.Running()) > 0 || hasReadySandbox(in.Status)
			acts.Start = nil
			return false, true
		case initDone:
			if i != frontier {
				continue
			}
			if n := nextInit(in, i+1); n == len(inits) {
				initialized = true
			} else {
				next := &inits[n]
				acts.Start = append(acts.Start, ContainerStart{Name: next.Name, Init: true, Index: n, RestartCount: nextCount(in.Status, next.Name)})
			}
		}
	}
	return initialized, false
}

// initFrontier is the index of the last init container that ran in the
// current sandbox (the one initialization has reached), len(init
// containers) once a regular container ran there (the pod has
// initialized), or -1 when none ran yet.
func initFrontier(in Inputs) int {
	sb, _ := in.Status.LatestSandbox()
	for i := range in.Pod.Spec.Containers {
		if _, ok := activeLatest(in.Status, in.Pod.Spec.Containers[i].Name, sb.ID); ok {
			return len(in.Pod.Spec.InitContainers)
		}
	}
	for i := len(in.Pod.Spec.InitContainers) - 1; i >= 0; i-- {
		if _, ok := activeLatest(in.Status, in.Pod.Spec.InitContainers[i].Name, sb.ID); ok {
			return i
		}
	}
	return -1
}

// activeLatest is the newest instance of the named container that belongs
// to the sandbox sandboxID (an instance whose sandbox is unknown counts).
func activeLatest(st *podstate.PodStatus, name, sandboxID string) (podstate.Container, bool) {
	c, ok := st.Latest(name)
	if !ok || (c.SandboxID != "" && sandboxID != "" && c.SandboxID != sandboxID) {
		return podstate.Container{}, false
	}
	return c, true
}

// initOutcome is where one init container stands.
type initOutcome int

const (
	// initBusy: running, or being (re)started; the next one waits.
	initBusy initOutcome = iota
	// initDone: exited 0, or a sidecar that has started.
	initDone
	// initFailed: failed and may not run again.
	initFailed
)

// initStep plans init container c (index i); passed says initialization
// has gone past it, so only a sidecar still needs anything.
func initStep(in Inputs, acts *Actions, c *corev1.Container, i int, passed bool) initOutcome {
	sb, _ := in.Status.LatestSandbox()
	latest, ok := activeLatest(in.Status, c.Name, sb.ID)
	sidecar := podutil.IsSidecar(c)
	switch {
	case passed && !sidecar:
		return initDone
	case !ok:
		// A sidecar whose instance is gone (garbage-collected) runs again.
		acts.Start = append(acts.Start, ContainerStart{Name: c.Name, Init: true, Index: i, RestartCount: nextCount(in.Status, c.Name)})
		return initBusy
	}
	switch latest.State {
	case podstate.ContainerCreated:
		acts.Kill = append(acts.Kill, staleCreated(latest))
		acts.Start = append(acts.Start, ContainerStart{Name: c.Name, Init: true, Index: i, RestartCount: nextCount(in.Status, c.Name)})
	case podstate.ContainerRunning:
		if sidecar {
			return sidecarRunning(in, acts, c, i, latest)
		}
		if pk, failed := unhealthy(in, latest.ID); failed {
			// Killed now; restarted once it has exited, after its
			// crash-loop back-off, like any failed container.
			acts.Kill = append(acts.Kill, probeKill(latest, pk, "Container", podutil.RestartsAfterKill(in.Pod, c, true)))
		}
	case podstate.ContainerUnknown:
		acts.Kill = append(acts.Kill, unknownKill(latest))
		if !podutil.RestartsAfterKill(in.Pod, c, true) {
			return initFailed
		}
		restartAfterFailure(in, acts, c, true, i)
	case podstate.ContainerExited:
		switch {
		case sidecar:
			restartAfterFailure(in, acts, c, true, i)
		case latest.ExitCode == 0:
			return initDone
		case !podutil.ShouldRestart(in.Pod, c, true, latest.ExitCode):
			return initFailed
		default:
			restartAfterFailure(in, acts, c, true, i)
		}
	}
	return initBusy
}

// sidecarRunning plans a running sidecar: killed when its probe failed
// (restarted after it exits), replaced when its spec changed, done once
// started (its startup probe, if any, succeeded).
func sidecarRunning(in Inputs, acts *Actions, c *corev1.Container, i int, latest podstate.Container) initOutcome {
	if pk, failed := unhealthy(in, latest.ID); failed {
		// The kubelet's message for a sidecar says neither "Container"
		// nor that it will be restarted, though it always is.
		acts.Kill = append(acts.Kill, probeKill(latest, pk, "Init container", false))
		acts.Start = append(acts.Start, ContainerStart{Name: c.Name, Init: true, Index: i, RestartCount: nextCount(in.Status, c.Name)})
		return initBusy
	}
	if in.Hash != nil && latest.Hash != "" && latest.Hash != in.Hash(c) {
		acts.Kill = append(acts.Kill, sidecarChangedKill(latest))
		acts.Start = append(acts.Start, ContainerStart{Name: c.Name, Init: true, Index: i, RestartCount: nextCount(in.Status, c.Name)})
		return initBusy
	}
	if kill, ok := resizeRestart(in, c, latest); ok {
		acts.Kill = append(acts.Kill, kill)
		acts.Start = append(acts.Start, ContainerStart{Name: c.Name, Init: true, Index: i, RestartCount: nextCount(in.Status, c.Name)})
		return initBusy
	}
	if in.Started != nil && !in.Started(latest.ID) {
		return initBusy
	}
	return initDone
}

// computeRegular plans the regular containers of an initialized pod and
// returns how many running ones are kept.
func computeRegular(in Inputs, acts *Actions) (keep int) {
	pod, st := in.Pod, in.Status
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		latest, ok := st.Latest(c.Name)
		if !ok {
			acts.Start = append(acts.Start, ContainerStart{Name: c.Name, Index: i})
			continue
		}
		switch latest.State {
		case podstate.ContainerRunning:
			if in.Hash != nil && latest.Hash != "" && latest.Hash != in.Hash(c) {
				acts.Kill = append(acts.Kill, specChangedKill(latest))
				acts.Start = append(acts.Start, ContainerStart{Name: c.Name, Index: i, RestartCount: nextCount(st, c.Name)})
				continue
			}
			if pk, failed := unhealthy(in, latest.ID); failed {
				// Killed and, unless its restart policy (its own, else
				// the pod's) is Never, started again in the same sync,
				// as the kubelet's computePodActions does: whatever the
				// killed instance's exit code (a process that exits 0 on
				// SIGTERM under OnFailure runs again), its restart rules
				// not consulted (it has not exited yet). The back-off is
				// judged on the instance that exited before this one.
				restart := podutil.RestartsAfterKill(pod, c, false) &&
					!(probeKillWaitsForExit && pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure)
				acts.Kill = append(acts.Kill, probeKill(latest, pk, "Container", restart))
				if restart {
					acts.Start = append(acts.Start, ContainerStart{Name: c.Name, Index: i, RestartCount: nextCount(st, c.Name)})
				}
				continue
			}
			if kill, ok := resizeRestart(in, c, latest); ok {
				acts.Kill = append(acts.Kill, kill)
				acts.Start = append(acts.Start, ContainerStart{Name: c.Name, Index: i, RestartCount: nextCount(st, c.Name)})
				continue
			}
			keep++
		case podstate.ContainerCreated:
			acts.Kill = append(acts.Kill, staleCreated(latest))
			acts.Start = append(acts.Start, ContainerStart{Name: c.Name, Index: i, RestartCount: nextCount(st, c.Name)})
		case podstate.ContainerUnknown:
			acts.Kill = append(acts.Kill, unknownKill(latest))
			if podutil.RestartsAfterKill(pod, c, false) {
				restartAfterFailure(in, acts, c, false, i)
			}
		case podstate.ContainerExited:
			if podutil.ShouldRestart(pod, c, false, latest.ExitCode) {
				restartAfterFailure(in, acts, c, false, i)
			}
		}
	}
	return keep
}

// startsRegular reports whether acts starts a regular container.
func startsRegular(acts Actions) bool {
	return slices.ContainsFunc(acts.Start, func(s ContainerStart) bool { return !s.Init && !s.Ephemeral })
}

// waitsRegular reports whether a regular container of pod waits (in
// back-off) to run again.
func waitsRegular(pod *corev1.Pod, acts Actions) bool {
	for _, c := range pod.Spec.Containers {
		if _, ok := acts.Waiting[c.Name]; ok {
			return true
		}
	}
	return false
}

// computeFreshSandbox plans the containers of a new sandbox: the init
// containers run again from the first (but for those of a pod that runs
// once which succeeded already: nextInit); regular containers that ran and
// may not run again (per the restart policies) are not started again.
func computeFreshSandbox(in Inputs, acts *Actions) {
	pod, st := in.Pod, in.Status
	if first := nextInit(in, 0); first < len(pod.Spec.InitContainers) {
		c := pod.Spec.InitContainers[first]
		acts.Start = append(acts.Start, ContainerStart{Name: c.Name, Init: true, Index: first, RestartCount: nextCount(st, c.Name)})
		return
	}
	acts.Start = append(acts.Start, regularToStart(in)...)
}

// regularToStart lists the regular containers a fresh sandbox runs: all
// but those whose last started instance may not run again (it exited, or
// is killed with the old sandbox, and the restart policies say no). An
// instance created but never started did not run.
func regularToStart(in Inputs) []ContainerStart {
	pod, st := in.Pod, in.Status
	var out []ContainerStart
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if ran, ok := lastRan(st, c.Name); ok && !mayRunAgain(pod, c, false, ran) {
			continue
		}
		out = append(out, ContainerStart{Name: c.Name, Index: i, RestartCount: nextCount(st, c.Name)})
	}
	return out
}

// lastRan is the newest instance of the named container that started
// (any state but Created), if any.
func lastRan(st *podstate.PodStatus, name string) (podstate.Container, bool) {
	if st == nil {
		return podstate.Container{}, false
	}
	for _, c := range st.Containers {
		if c.Name == name && c.State != podstate.ContainerCreated {
			return c, true
		}
	}
	return podstate.Container{}, false
}

// mayRunAgain reports whether container c may run another instance after
// instance ran: after an exit, as its restart policies say for the exit
// code; when it is still running or unknown (it is about to be killed),
// as they say after a kill.
func mayRunAgain(pod *corev1.Pod, c *corev1.Container, init bool, ran podstate.Container) bool {
	switch ran.State {
	case podstate.ContainerExited:
		return podutil.ShouldRestart(pod, c, init, ran.ExitCode)
	case podstate.ContainerCreated:
		return true
	default:
		return podutil.RestartsAfterKill(pod, c, init)
	}
}

// initDoneForGood reports whether init container c has done its work for
// good: in a pod that runs once (podutil.RunsOnce), a regular init
// container that succeeded, in this sandbox or an earlier one. A new
// sandbox does not run it again (none of the pod's containers runs
// twice); its sidecars do run again.
func initDoneForGood(in Inputs, c *corev1.Container) bool {
	if podutil.IsSidecar(c) || !podutil.RunsOnce(in.Pod) {
		return false
	}
	ran, ok := lastRan(in.Status, c.Name)
	return ok && ran.State == podstate.ContainerExited && ran.ExitCode == 0
}

// nextInit is the index of the first init container from index from on
// that a sandbox still has to run (initDoneForGood ones are skipped), or
// the number of init containers when none is left.
func nextInit(in Inputs, from int) int {
	inits := in.Pod.Spec.InitContainers
	for from < len(inits) && initDoneForGood(in, &inits[from]) {
		from++
	}
	return from
}

// initSpent reports whether a pod that runs once can never initialize in
// a new sandbox: one of its regular init containers ran, did not succeed,
// and may not run again.
func initSpent(in Inputs) bool {
	if !podutil.RunsOnce(in.Pod) {
		return false
	}
	for i := range in.Pod.Spec.InitContainers {
		c := &in.Pod.Spec.InitContainers[i]
		if podutil.IsSidecar(c) || initDoneForGood(in, c) {
			continue
		}
		if ran, ok := lastRan(in.Status, c.Name); ok && !mayRunAgain(in.Pod, c, true, ran) {
			return true
		}
	}
	return false
}

// restartAfterFailure starts the container again; its crash-loop
// back-off may still hold it (holdBackedOff).
func restartAfterFailure(in Inputs, acts *Actions, c *corev1.Container, init bool, index int) {
	acts.Start = append(acts.Start, ContainerStart{Name: c.Name, Init: init, Index: index, RestartCount: nextCount(in.Status, c.Name)})
}

// holdBackedOff applies the crash-loop back-off to every container acts
// would start, as the kubelet does before each start (doBackOff): one
// with an exited instance (the newest, whichever sandbox it ran in) is
// held while its back-off since that instance's FinishedAt lasts, and
// waits in CrashLoopBackOff; otherwise the restart is returned, for the
// back-off to record (the first one after an exit goes at once). A container with no exited
// instance (a first start; a running one killed for its probe or spec
// whose earlier instances are gone) starts without touching it.
func holdBackedOff(in Inputs, acts *Actions) []restart {
	if in.Backoff == nil {
		return nil
	}
	var let []restart
	kept := acts.Start[:0]
	for _, s := range acts.Start {
		c := containerSpec(in.Pod, s)
		exited, ok := newestExited(in.Status, s.Name)
		if s.Ephemeral || c == nil || !ok {
			kept = append(kept, s)
			continue
		}
		key := BackoffKey(in.Pod, c)
		finished := exited.FinishedAt
		if finished.IsZero() {
			finished = exited.CreatedAt
		}
		delay, held := in.Backoff.InBackOff(key, finished, in.Now)
		if !held {
			let = append(let, restart{name: s.Name, key: key, finished: finished})
			kept = append(kept, s)
			continue
		}
		remaining := finished.Add(delay).Sub(in.Now)
		if acts.RetryAfter == 0 || remaining < acts.RetryAfter {
			acts.RetryAfter = remaining
		}
		acts.Waiting[s.Name] = Waiting{
			Reason:  podutil.ReasonCrashLoopBackOff,
			Message: fmt.Sprintf("back-off %v restarting failed container=%s pod=%s", delay, s.Name, FormatPod(in.Pod)),
		}
	}
	acts.Start = kept
	return let
}

// FormatPod names a pod as the kubelet's messages do (its format.Pod):
// name_namespace(uid).
func FormatPod(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// newestExited is the newest exited instance of the named container.
func newestExited(st *podstate.PodStatus, name string) (podstate.Container, bool) {
	if st == nil {
		return podstate.Container{}, false
	}
	for _, c := range st.Containers {
		if c.Name == name && c.State == podstate.ContainerExited {
			return c, true
		}
	}
	return podstate.Container{}, false
}

func unhealthy(in Inputs, id string) (ProbeKill, bool) {
	if in.Unhealthy == nil {
		return ProbeKill{}, false
	}
	return in.Unhealthy(id)
}

// unknownKill is the kill of an instance in an unknown state, before it
// is restarted, with the kubelet's message.
func unknownKill(c podstate.Container) ContainerKill {
	return ContainerKill{ID: c.ID, Name: c.Name, Reason: "state unknown",
		Message: `Container is in "unknown" state, try killing it before restart`}
}

// specChangedKill is the kill of a running instance whose container's
// spec changed; it is started again whatever the restart policy.
func specChangedKill(c podstate.Container) ContainerKill {
	return ContainerKill{ID: c.ID, Name: c.Name, Reason: "container spec changed",
		Message: fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)}
}

// sidecarChangedKill is the kill of a running sidecar whose container's
// spec changed, with the kubelet's message for an init container (neither
// "Container" nor that it will be restarted, though it always is).
func sidecarChangedKill(c podstate.Container) ContainerKill {
	return ContainerKill{ID: c.ID, Name: c.Name, Reason: "container spec changed",
		Message: fmt.Sprintf("Init container %s definition changed", c.Name)}
}

// probeKill is the kill of an instance whose liveness or startup probe
// failed, with the kubelet's message: "<what> <name> failed <probe>
// probe", followed by ", will be restarted" when it is started again in
// the same sync (restart).
func probeKill(c podstate.Container, pk ProbeKill, what string, restart bool) ContainerKill {
	msg := fmt.Sprintf("%s %s failed %s probe", what, c.Name, pk.Probe)
	if restart {
		msg += ", will be restarted"
	}
	return ContainerKill{ID: c.ID, Name: c.Name, Reason: msg, Message: msg, Grace: pk.Grace}
}

func hasReadySandbox(st *podstate.PodStatus) bool {
	return st != nil && slices.ContainsFunc(st.Sandboxes, func(s podstate.Sandbox) bool { return s.State == podstate.SandboxReady })
}

// staleCreated is the kill of an instance created but never started (the
// agent died between CreateContainer and StartContainer, or StartContainer
// failed). The runtime keeps its name and attempt reserved until it is
// removed, so the next instance takes the next attempt and this one goes.
func staleCreated(c podstate.Container) ContainerKill {
	return ContainerKill{ID: c.ID, Name: c.Name, Reason: "created but never started", Remove: true}
}

// nextCount is the attempt number of a container's next instance: one
// past the highest attempt of any instance the runtime holds (a Created
// instance's attempt is taken too, and an instance left in Created by a
// crashed sync may be older than a later, lower attempt).
func nextCount(st *podstate.PodStatus, name string) int {
	next := 0
	if st == nil {
		return next
	}
	for _, c := range st.Containers {
		if c.Name == name && c.RestartCount+1 > next {
			next = c.RestartCount + 1
		}
	}
	return next
}

// staleCreatedBelowLatest removes the instances left in Created that are
// not their container's newest (the newest is handled with its
// container): they will never start, and they hold their attempt's name.
func staleCreatedBelowLatest(st *podstate.PodStatus, acts *Actions) {
	for _, c := range st.Containers {
		if c.State != podstate.ContainerCreated {
			continue
		}
		if latest, ok := st.Latest(c.Name); ok && latest.ID != c.ID {
			acts.Kill = append(acts.Kill, staleCreated(c))
		}
	}
}
