package scenarios

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// hookSlack is how much later than its grace period after its preStop hook
// began a container may get SIGTERM: the grace is counted in whole
// seconds.
const hookSlack = time.Second

// hookChecks is the checker's state for prestop-before-stop and
// poststart-before-started.
type hookChecks struct {
	// judged: container instances whose first SIGTERM was judged.
	judged map[string]bool
	// forced: pods deleted with grace 0 (their containers are stopped
	// without hooks).
	forced map[types.UID]bool
	// maxGrace is the longest deletion grace period asked per pod.
	maxGrace map[types.UID]int64
	// restarts and restartedAt: the agent's start count and when it last
	// changed (a new agent does not run the postStart hooks of containers
	// it finds running, as the kubelet does not).
	restarts    int
	restartedAt time.Time
	reported    map[string]bool
}

func newHookChecks() *hookChecks {
	return &hookChecks{judged: map[string]bool{}, forced: map[types.UID]bool{},
		maxGrace: map[types.UID]int64{}, reported: map[string]bool{}}
}

// onWriteHooks follows deletions, and checks
// poststart-before-started on every status the agent writes: a container
// with a postStart sleep hook of S seconds is never reported running (or
// started) before S seconds after it started, unless an agent started
// since (it does not run the hook of a container it finds running).
func (c *Checker) onWriteHooks(r apiserver.Record) {
	hc := c.hooks
	p := r.Pod
	if r.Actor == apiserver.ActorUser && (r.Verb == apiserver.VerbGracefulDelete || r.Verb == apiserver.VerbDelete) {
		grace := int64(0)
		if g := p.DeletionGracePeriodSeconds; g != nil {
			grace = *g
		}
		if grace == 0 {
			hc.forced[r.UID] = true
		}
		hc.maxGrace[r.UID] = max(hc.maxGrace[r.UID], grace)
		return
	}
	if r.Actor != apiserver.ActorAgent || r.Verb != apiserver.VerbPatchStatus {
		return
	}
	for _, cs := range p.Status.ContainerStatuses {
		running := cs.State.Running
		spec := specOf(p, cs.Name)
		if running == nil || spec == nil || spec.Lifecycle == nil || spec.Lifecycle.PostStart == nil || spec.Lifecycle.PostStart.Sleep == nil {
			continue
		}
		if !running.StartedAt.After(hc.restartedAt) {
			continue
		}
		hookEnd := running.StartedAt.Add(time.Duration(spec.Lifecycle.PostStart.Sleep.Seconds) * time.Second)
		key := "poststart/" + cs.ContainerID
		if r.At.Before(hookEnd) && !hc.reported[key] {
			hc.reported[key] = true
			c.fail("poststart-before-started", "container %s of pod %s/%s reported running %v after it started, before its %ds postStart hook could end",
				cs.Name, p.Namespace, p.Name, r.At.Sub(running.StartedAt.Time), spec.Lifecycle.PostStart.Sleep.Seconds)
		}
	}
}

// specOf returns pod's regular container name.
func specOf(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// checkHooks checks prestop-before-stop against the runtime's truth: a
// container with an exec preStop hook gets its first SIGTERM only after
// the hook ran in it, and is asked to stop no later than the grace period
// after the hook began (a hook that outlives the grace is cut). Containers of pods
// force-deleted (stopped with grace 0, no hook) are not judged, nor, for
// the hook's absence, a stop while the runtime is impaired.
func (c *Checker) checkHooks(containers []RuntimeContainer) {
	hc := c.hooks
	if n := c.h.Restarts(); n != hc.restarts {
		hc.restarts, hc.restartedAt = n, c.h.K.Now()
	}
	for _, ct := range containers {
		if hc.judged[ct.ID] {
			continue
		}
		spec := c.containerSpec(ct.PodUID, ct.Name)
		if spec == nil || spec.Lifecycle == nil || spec.Lifecycle.PreStop == nil || spec.Lifecycle.PreStop.Exec == nil {
			continue
		}
		termAt, ok := c.h.Runtime.TrueStopRequested(ct.ID)
		if !ok {
			continue
		}
		hc.judged[ct.ID] = true
		if hc.forced[ct.PodUID] {
			continue
		}
		cmd := strings.Join(spec.Lifecycle.PreStop.Exec.Command, " ")
		var hookAt int64
		for _, e := range c.h.Runtime.TrueExecs(ct.ID) {
			if e.Cmd == cmd && e.At <= termAt {
				hookAt = e.At
			}
		}
		if hookAt == 0 {
			if c.h.K.Elapsed() > c.suite.runtimeImpaired {
				c.fail("prestop-before-stop", "container %s (%s) of pod %s got SIGTERM at +%v without its preStop hook %q having run",
					ct.Name, ct.ID, ct.PodUID, c.elapsedAt(termAt), cmd)
			}
			continue
		}
		// The agent answers for when it asked for the stop after the hook;
		// a runtime that delays the call (hung, slow) delays the SIGTERM.
		askedAt := termAt
		if at, ok := c.h.Runtime.TrueStopAskedAt(ct.ID); ok && at >= hookAt && at < termAt {
			askedAt = at
		}
		grace := max(c.specGrace(ct.PodUID), hc.maxGrace[ct.PodUID])
		if waited := time.Duration(askedAt - hookAt); waited > time.Duration(grace)*time.Second+hookSlack {
			c.fail("prestop-before-stop", "container %s (%s) of pod %s got SIGTERM %v after its preStop hook began, past its grace period of %ds",
				ct.Name, ct.ID, ct.PodUID, waited, grace)
		}
	}
}

// specGrace is the pod's spec grace period (as last written).
func (c *Checker) specGrace(uid types.UID) int64 {
	if pod := c.probes.pods[uid]; pod != nil {
		return refmodel.SpecGracePeriod(pod)
	}
	return refmodel.DefaultGracePeriodSeconds
}
