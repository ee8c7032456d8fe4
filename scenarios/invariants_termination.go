package scenarios

import (
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podsource"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// graceSlack is how late, after the shortest grace period requested, a
// deleted pod's containers may still run (grace-honoured): the runtime's
// least stop time (2 s, runtimesync.MinStopTimeout, whatever the grace)
// plus 3 s for the watch event to reach the agent, the pod cache to be
// refreshed past the worker's last action (a relist every second) and a
// step in flight to be cancelled.
const graceSlack = 5 * time.Second

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

// deletion is one deleted pod: the shortest grace requested and the
// deadline its containers must be stopped by (time since the start).
type deletion struct {
	name     string
	grace    int64
	deadline time.Duration
	reported bool
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
	deadline := c.h.K.Elapsed() + time.Duration(grace)*time.Second + graceSlack
	d := c.term.deletions[r.UID]
	if d == nil {
		c.term.deletions[r.UID] = &deletion{name: r.Namespace + "/" + r.Name, grace: grace, deadline: deadline}
		return
	}
	d.grace = min(d.grace, grace)
	d.deadline = min(d.deadline, deadline)
}

// checkTermination checks grace-honoured and static-exclusive against the
// runtime's truth.
func (c *Checker) checkTermination(containers []RuntimeContainer) {
	c.checkGraceHonoured(containers)
	c.checkStaticExclusive(containers)
}

// checkGraceHonoured: once deleted, every container of a pod is stopped no
// later than the shortest grace period requested (plus graceSlack; after
// an agent restart, plus restartSlack from the restart). Not checked while
// the agent is down.
func (c *Checker) checkGraceHonoured(containers []RuntimeContainer) {
	t := c.term
	now := c.h.K.Elapsed()
	if c.h.Agent() == nil {
		return
	}
	if n := c.h.Restarts(); n != t.restarts {
		t.restarts = n
		for _, d := range t.deletions {
			d.deadline = max(d.deadline, now+time.Duration(d.grace)*time.Second+restartSlack)
		}
	}
	for _, ct := range containers {
		d := t.deletions[ct.PodUID]
		if d == nil || d.reported || now <= d.deadline || ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		d.reported = true
		c.fail("grace-honoured", "container %s of pod %s (%s) still runs %v after its deadline (grace %ds requested)",
			ct.Name, d.name, ct.PodUID, now-d.deadline, d.grace)
	}
}

// checkStaticExclusive: never two running instances (pod UIDs) of a static
// pod's full name in the runtime.
func (c *Checker) checkStaticExclusive(containers []RuntimeContainer) {
	static := staticSandboxes(c.h.Runtime.TrueSandboxes())
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
