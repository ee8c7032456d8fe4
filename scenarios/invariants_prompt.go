package scenarios

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

// The contract status-prompt holds the agent to, as upstream's kubelet
// keeps it: the PLEG relists the runtime every second (pkg/kubelet
// kubelet.go, plegRelistPeriod), so a container's start or exit is seen
// at most one relist period after it happened; the relist's event wakes
// the pod's worker at once (syncLoopIteration → podWorkers.UpdatePod),
// whose sync hands the new status to the status manager, which writes it
// at once (its podStatusChannel; the 10 s batch resync is only the
// fallback). What a container without readiness or startup probe reports
// as ready is decided in that same sync (a running container without a
// readiness probe is ready), so it reaches the API with its start.
const (
	// plegRelistPeriod is upstream's relist period: a change the runtime
	// shows is seen by the next relist, at most this long after.
	plegRelistPeriod = time.Second
	// promptWriteAllowance is for the relist's own calls, the pod
	// worker's sync and the status write, which take no virtual time
	// unless a fault slows them (then the invariant is excused), and the
	// checker's own 100 ms step: one more relist period, so that a
	// relist that listed just before the change and one whose calls took
	// a moment both fit.
	promptWriteAllowance = time.Second
	// statusPromptBound is how long after a container's start or exit in
	// the runtime its pod's API status may still not show it, while the
	// API and the runtime are healthy and the agent runs.
	statusPromptBound = plegRelistPeriod + promptWriteAllowance
	// pendingFaultReach is how long after the runtime last held an
	// injected fault not yet used up a call it slowed may still run:
	// the operations draw latencies of up to 3 s a call, and faults on
	// the same method add up.
	pendingFaultReach = 10 * time.Second
)

// promptEvent is one change of a container in the runtime that the pod's
// API status must show within statusPromptBound.
type promptEvent struct {
	uid       types.UID
	namespace string // the pod's, from its container's labels
	pod       string
	container string
	id        string
	exit      bool          // an exit, else a start
	started   int64         // when the instance started (unix ns), kept: it may be removed before the judgment
	at        time.Duration // when it happened, since the run began
}

// promptChecks is what status-prompt remembers: the container instances
// whose start and exit it has seen, and the changes not yet judged.
type promptChecks struct {
	started, exited map[string]bool
	pending         []promptEvent
	// faultsSeen is the last check at which the runtime held an injected
	// fault not yet used up (the fault operations' excuses run from
	// their injection, but such a fault acts when the agent calls).
	faultsSeen time.Duration
	everFaulty bool
}

func newPromptChecks() *promptChecks {
	return &promptChecks{started: map[string]bool{}, exited: map[string]bool{}}
}

// checkStatusPrompt (every step): every container start and exit the
// runtime shows reaches its pod's API status within statusPromptBound
// (status-prompt): the status names that instance running (and ready,
// for a regular container without readiness or startup probe) or
// terminated, or already a later instance. A change is not judged when
// the window it had was impaired (an API or runtime fault, the agent
// down or just started), nor for a pod whose worker was busy with a long
// step the contract does not bound by a relist (a kill in progress, a
// lifecycle hook, a slow image pull), nor for a pod being deleted,
// terminal, or static (its status goes to its mirror pod).
func (c *Checker) checkStatusPrompt(truth []RuntimeContainer) {
	p := c.prompt
	now := c.h.K.Elapsed()
	epoch := c.h.K.Now().UnixNano() - int64(now)
	if c.h.Runtime.FaultsPending() {
		p.faultsSeen, p.everFaulty = now, true
	}
	changes := truth
	if !c.changed("status-prompt", readsRuntime, false) {
		changes = nil // no start or exit since the last look
	}
	for _, ct := range changes {
		if ct.State == runtimeapi.ContainerState_CONTAINER_CREATED || ct.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
			continue
		}
		if !p.started[ct.ID] {
			p.started[ct.ID] = true
			if at, ok := c.h.Runtime.TrueStartedAt(ct.ID); ok {
				p.pending = append(p.pending, c.promptEventOf(ct, false, time.Duration(at-epoch)))
			}
		}
		if ct.State == runtimeapi.ContainerState_CONTAINER_EXITED && !p.exited[ct.ID] {
			p.exited[ct.ID] = true
			if exit, ok := c.h.Runtime.TrueExit(ct.ID); ok {
				p.pending = append(p.pending, c.promptEventOf(ct, true, time.Duration(exit.FinishedAt-epoch)))
			}
		}
	}
	var due []promptEvent
	kept := p.pending[:0]
	for _, ev := range p.pending {
		if now-ev.at >= statusPromptBound {
			due = append(due, ev)
		} else {
			kept = append(kept, ev)
		}
	}
	p.pending = kept
	if len(due) == 0 {
		return
	}
	// Each pod due is read once, and its containers found once.
	pods, excused := map[types.UID]*corev1.Pod{}, map[types.UID]bool{}
	for _, ev := range due {
		if _, seen := pods[ev.uid]; !seen {
			pod, err := c.h.API.User().GetPod(ev.namespace, ev.pod)
			if err != nil || pod.UID != ev.uid {
				pod = nil
			}
			pods[ev.uid] = pod
		}
	}
	var mine map[types.UID][]RuntimeContainer
	for _, ev := range due {
		pod := pods[ev.uid]
		if pod == nil || c.promptWindowExcused(ev) {
			continue
		}
		if _, known := excused[ev.uid]; !known {
			if mine == nil {
				mine = map[types.UID][]RuntimeContainer{}
				for _, ct := range truth {
					if _, due := pods[ct.PodUID]; due {
						mine[ct.PodUID] = append(mine[ct.PodUID], ct)
					}
				}
			}
			excused[ev.uid] = c.promptPodBusy(pod)
		}
		if excused[ev.uid] || c.promptKillBusy(mine[ev.uid], ev) {
			continue
		}
		if ok, shown := promptShown(ev, pod, c.needsReady(pod, ev), c.h.Runtime.TrueStartedAt); !ok {
			kind := "start"
			if ev.exit {
				kind = "exit"
			}
			c.fail("status-prompt", "the %s of container %s (%s) of pod %s/%s at +%v is not in its API status %v later (bound %v): %s",
				kind, ev.container, shortID(ev.id), pod.Namespace, pod.Name, ev.at, now-ev.at, statusPromptBound, shown)
		}
	}
}

// promptEventOf is the change ct made at at, naming its pod by the
// labels the agent gave the container.
func (c *Checker) promptEventOf(ct RuntimeContainer, exit bool, at time.Duration) promptEvent {
	ev := promptEvent{uid: ct.PodUID, container: ct.Name, id: ct.ID, exit: exit, at: at}
	ev.started, _ = c.h.Runtime.TrueStartedAt(ct.ID)
	if cfg, ok := c.h.Runtime.TrueContainerConfigView(ct.ID); ok {
		ev.namespace, ev.pod = cfg.GetLabels()[podstate.LabelPodNamespace], cfg.GetLabels()[podstate.LabelPodName]
	}
	return ev
}

// promptWindowExcused reports whether ev's window was impaired: the agent
// down or just started, an API or runtime fault (their excuses, or an
// injected runtime fault still waiting for the calls it will slow), a
// node shutdown under way.
func (c *Checker) promptWindowExcused(ev promptEvent) bool {
	now := c.h.K.Elapsed()
	if c.h.Agent() == nil || c.impairedWithin(now-ev.at) {
		return true
	}
	if p := c.prompt; p.everFaulty && p.faultsSeen+pendingFaultReach >= ev.at {
		return true
	}
	return c.shutdown != nil && c.shutdown.active
}

// promptPodBusy reports whether pod is not judged at all: deleted, or
// terminal (its worker is stopping it, or done), or one whose worker's
// steps the contract does not bound by a relist: a lifecycle hook runs
// inside one (for up to the grace period), a slow image is pulled inside
// one.
func (c *Checker) promptPodBusy(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return true
	}
	slow := map[string]bool{}
	for _, img := range propertyRegistry() {
		if img.PullLatency > 0 {
			slow[img.Ref] = true
		}
	}
	for _, ctr := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if ctr.Lifecycle != nil && (ctr.Lifecycle.PostStart != nil || ctr.Lifecycle.PreStop != nil) {
			return true
		}
		if slow[ctr.Image] {
			return true
		}
	}
	return false
}

// promptKillBusy reports whether a kill of one of the pod's containers was
// in progress during ev's window (asked before now, the container not
// gone before the window began): the worker's step waits for it, up to
// the grace period, and the agent's own kills are its decisions, not
// changes it must catch up with.
func (c *Checker) promptKillBusy(containers []RuntimeContainer, ev promptEvent) bool {
	now := c.h.K.Now().UnixNano()
	start := now - int64(c.h.K.Elapsed()-ev.at)
	for _, ct := range containers {
		asked, ok := c.h.Runtime.TrueStopAskedAt(ct.ID)
		if !ok || asked > now {
			continue
		}
		if exit, exited := c.h.Runtime.TrueExit(ct.ID); !exited || exit.FinishedAt >= start {
			return true
		}
	}
	return false
}

// needsReady reports whether ev's container must show ready with its
// start: a regular container without readiness or startup probe that
// still runs.
func (c *Checker) needsReady(pod *corev1.Pod, ev promptEvent) bool {
	if ev.exit {
		return false
	}
	for _, ctr := range pod.Spec.Containers {
		if ctr.Name == ev.container {
			if ctr.ReadinessProbe != nil || ctr.StartupProbe != nil {
				return false
			}
			_, exited := c.h.Runtime.TrueExit(ev.id)
			return !exited
		}
	}
	return false
}

// promptShown reports whether pod's API status shows ev, and what it
// shows of the container otherwise. A status that names a later instance
// of the container (started after ev) shows it too: it was written after
// the change. startedAt is the runtime's truth of when an instance began.
func promptShown(ev promptEvent, pod *corev1.Pod, ready bool, startedAt func(string) (int64, bool)) (bool, string) {
	statuses := append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
	i := slices.IndexFunc(statuses, func(cs corev1.ContainerStatus) bool { return cs.Name == ev.container })
	if i < 0 {
		return false, "no status of the container"
	}
	cs := statuses[i]
	cur := trimContainerID(cs.ContainerID)
	shown := describeContainerStatus(cs)
	if last := cs.LastTerminationState.Terminated; last != nil && trimContainerID(last.ContainerID) == ev.id {
		return true, shown
	}
	if cur != ev.id {
		// A later instance shown: its start came after ev's instance's.
		other, ok := startedAt(cur)
		return cur != "" && ev.started > 0 && ok && other > ev.started, shown
	}
	switch {
	case cs.State.Terminated != nil:
		return true, shown
	case ev.exit:
		return false, shown
	case cs.State.Running != nil:
		return !ready || cs.Ready, shown
	}
	return false, shown
}

// describeContainerStatus is a short account of a container status for
// a violation's detail.
func describeContainerStatus(cs corev1.ContainerStatus) string {
	var b strings.Builder
	b.WriteString("id=" + shortID(trimContainerID(cs.ContainerID)))
	switch {
	case cs.State.Running != nil:
		b.WriteString(" running")
	case cs.State.Terminated != nil:
		b.WriteString(" terminated(" + cs.State.Terminated.Reason + ")")
	case cs.State.Waiting != nil:
		b.WriteString(" waiting(" + cs.State.Waiting.Reason + ")")
	}
	if cs.Ready {
		b.WriteString(" ready")
	}
	return b.String()
}

// trimContainerID drops the runtime scheme of an API container ID
// ("containerd://<id>").
func trimContainerID(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}

// shortID is the first 12 characters of a container ID.
func shortID(id string) string { return id[:min(len(id), 12)] }
