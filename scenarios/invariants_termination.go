package scenarios

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podsource"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// graceSlack is how late, past what the contract allows a deleted pod's
// containers to run (stopBound), one may still be seen running
// (grace-honoured): the agent counts the grace period from when it acts on
// the deletion, which may wait for the pod cache to be refreshed past the
// worker's last action (a relist every second, as upstream's pod worker
// waits for a newer cache), plus the checker's own step (it looks every
// 100 ms of virtual time). The watch delivers an event at once in the
// simulator; faults that delay the agent move the deadline on their own
// (restartSlack, excuseGrace).
const graceSlack = time.Second + 100*time.Millisecond

// restartSlack is how long a new agent has, on top of the grace period,
// to stop a deleted pod it learns of after a restart (listing the API,
// relisting the runtime, the first housekeeping for an orphan): like the
// kubelet, it counts the grace period from when it learns of the deletion.
const restartSlack = 10 * time.Second

// terminationState is what the grace-honoured and static-exclusive checks
// remember.
type terminationState struct {
	// deletions: the API pods a user deleted, by UID.
	deletions map[types.UID]*deletion
	// restarts is the agent's start count at the last check.
	restarts int
	// clashes already reported (sorted UID pairs).
	clashes map[string]bool
}

// deletion is one deleted pod: the shortest grace requested, the time its
// containers may take to stop from when the agent acts (stopBound of that
// grace) and the deadline they must be stopped by (time since the start).
type deletion struct {
	name     string
	grace    int64
	bound    time.Duration
	deadline time.Duration
	reported bool
	// at: when the deletion was written; known: the pod's container
	// instances that may run (those of before, and of a step already in
	// flight), for deleted-stops; restarted: reported.
	at        time.Duration
	known     map[string]bool
	restarted bool
}

// stopBound is the longest the kubelet's contract lets pod's containers
// run once it kills them with a grace period of grace seconds: the grace
// period, but at least the runtime's least stop timeout (the kubelet's
// minimum grace, 2 s); a preStop hook may use up the grace and leave its
// container that least stop timeout after it, and sidecars stop one after
// another once the others have stopped, each given at least that timeout
// even when no grace is left.
func stopBound(pod *corev1.Pod, grace int64) time.Duration {
	bound := max(time.Duration(grace)*time.Second, minStopTimeout)
	hasPreStop := func(c *corev1.Container) bool { return c.Lifecycle != nil && c.Lifecycle.PreStop != nil }
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; refmodel.IsSidecar(c) {
			bound += minStopTimeout
			if hasPreStop(c) {
				bound += minStopTimeout
			}
		}
	}
	for i := range pod.Spec.Containers {
		if hasPreStop(&pod.Spec.Containers[i]) {
			bound += minStopTimeout
		}
	}
	return bound
}

func newTerminationState() *terminationState {
	return &terminationState{deletions: map[types.UID]*deletion{}, clashes: map[string]bool{}}
}

// onWriteTermination records the grace periods users ask for when they
// delete a pod (gracefully, again with a shorter grace, or forced).
func (c *Checker) onWriteTermination(r apiserver.Record) {
	if r.Kind != apiserver.KindPod || r.Pod == nil || r.Actor != apiserver.ActorUser {
		return
	}
	if r.Verb != apiserver.VerbGracefulDelete && r.Verb != apiserver.VerbDelete {
		return
	}
	grace := int64(0)
	if g := r.Pod.DeletionGracePeriodSeconds; g != nil {
		grace = *g
	}
	bound := stopBound(r.Pod, grace)
	deadline := c.h.K.Elapsed() + bound + graceSlack
	d := c.term.deletions[r.UID]
	if d == nil {
		known := map[string]bool{}
		for _, ct := range c.truth().byPod[r.UID] {
			if ct.PodUID == r.UID {
				known[ct.ID] = true
			}
		}
		c.term.deletions[r.UID] = &deletion{name: r.Namespace + "/" + r.Name, grace: grace, bound: bound, deadline: deadline,
			at: c.h.K.Elapsed(), known: known}
		return
	}
	d.grace, d.bound = min(d.grace, grace), min(d.bound, bound)
	d.deadline = min(d.deadline, deadline)
}

// checkTermination checks grace-honoured, deleted-stops and
// static-exclusive against the runtime's truth.
func (c *Checker) checkTermination(containers []RuntimeContainer) {
	c.checkGraceHonoured(containers)
	c.checkDeletedStops(containers)
	c.checkStaticExclusive(containers)
}

// checkGraceHonoured: once deleted, every container of a pod is stopped no
// later than the shortest grace period requested allows (stopBound, plus
// graceSlack; after an agent restart, plus restartSlack from the restart).
// Not checked while the agent is down.
func (c *Checker) checkGraceHonoured(containers []RuntimeContainer) {
	t := c.term
	now := c.h.K.Elapsed()
	if c.h.Agent() == nil {
		return
	}
	if n := c.h.Restarts(); n != t.restarts {
		t.restarts = n
		for _, d := range t.deletions {
			d.deadline = max(d.deadline, now+d.bound+restartSlack)
		}
	}
	for _, ct := range containers {
		d := t.deletions[ct.PodUID]
		if d == nil || d.reported || now <= d.deadline || ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		d.reported = true
		c.fail("grace-honoured", "container %s of pod %s (%s) still runs %v after its deadline (grace %ds requested, %v allowed to stop)",
			ct.Name, d.name, ct.PodUID, now-d.deadline, d.grace, d.bound)
	}
}

// checkDeletedStops: once a user deleted a pod, no new instance of its
// containers is started (absence): only those that existed when it was
// deleted, or that a step already in flight started within graceSlack of
// it, may run. A runtime impairment around the deletion excuses an
// instance a call held back since before it (a hung create that returns
// late).
func (c *Checker) checkDeletedStops(containers []RuntimeContainer) {
	now := c.h.K.Elapsed()
	for _, ct := range containers {
		d := c.term.deletions[ct.PodUID]
		if d == nil || d.known[ct.ID] || ct.State == runtimeapi.ContainerState_CONTAINER_CREATED {
			continue
		}
		if now-d.at <= graceSlack || c.suite.runtimeImpaired >= d.at-graceSlack {
			d.known[ct.ID] = true
			continue
		}
		if !d.restarted {
			d.restarted = true
			c.fail("deleted-stops", "container %s of pod %s (%s) started as a new instance %s %v after the pod was deleted",
				ct.Name, d.name, ct.PodUID, ct.ID, now-d.at)
		}
	}
}

// checkStaticExclusive: never two running instances (pod UIDs) of a static
// pod's full name in the runtime.
func (c *Checker) checkStaticExclusive(containers []RuntimeContainer) {
	static := staticSandboxes(c.truth().sandboxes)
	byName := map[string]map[types.UID]bool{}
	for _, ct := range containers {
		name, ok := static[ct.PodUID]
		if !ok || ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if byName[name] == nil {
			byName[name] = map[types.UID]bool{}
		}
		byName[name][ct.PodUID] = true
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		uids := slices.Sorted(maps.Keys(byName[name]))
		if len(uids) < 2 {
			continue
		}
		key := name + fmtUIDs(uids)
		if c.term.clashes[key] {
			continue
		}
		c.term.clashes[key] = true
		c.fail("static-exclusive", "static pod %s runs as %d instances at once: %v", name, len(uids), uids)
	}
}

// staticSandboxes maps the UIDs of static pods in the runtime to their
// full names (namespace/name); a sandbox carries its pod's annotations.
func staticSandboxes(sbs []*runtimeapi.PodSandbox) map[types.UID]string {
	out := map[types.UID]string{}
	for _, sb := range sbs {
		if src := sb.Annotations[podsource.AnnotationConfigSource]; src != podsource.SourceFile && src != podsource.SourceHTTP {
			continue
		}
		out[types.UID(sb.Labels[podstate.LabelPodUID])] = sb.Labels[podstate.LabelPodNamespace] + "/" + sb.Labels[podstate.LabelPodName]
	}
	return out
}

func fmtUIDs(uids []types.UID) string {
	s := ""
	for _, u := range uids {
		s += " " + string(u)
	}
	return s
}

// MirrorsMissing is the mirror-present liveness check, for when the world
// has settled with the API reachable: every static pod with a running
// container has a mirror pod in the API whose mirror annotation is the
// static pod's hash (its UID), not being deleted. It returns one line per
// static pod without one.
func (c *Checker) MirrorsMissing() []string {
	mirrors := map[string]string{} // namespace/name → hash
	for _, p := range c.h.API.User().ListAllPods() {
		if hash, ok := p.Annotations[podsource.AnnotationConfigMirror]; ok && p.DeletionTimestamp == nil {
			mirrors[p.Namespace+"/"+p.Name] = hash
		}
	}
	static := staticSandboxes(c.h.Runtime.TrueSandboxes())
	var missing []string
	seen := map[types.UID]bool{}
	for _, ct := range TrueContainers(c.h) {
		name, ok := static[ct.PodUID]
		if !ok || seen[ct.PodUID] || ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		seen[ct.PodUID] = true
		if got, ok := mirrors[name]; !ok || got != string(ct.PodUID) {
			missing = append(missing, "mirror-present: static pod "+name+" ("+string(ct.PodUID)+") has no mirror pod with its hash (mirror hash "+got+")")
		}
	}
	return missing
}
