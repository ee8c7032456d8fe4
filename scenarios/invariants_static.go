package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podsource"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// watchSettle is how long an agent must have been up before the checker
// counts on its directory watch: the watch is made when the file source
// starts, and a change before that is seen by the first scan only (which
// cannot tell a manifest removed and written back from one left alone).
const watchSettle = time.Second

// staticChecks is the checker's model of the static pod manifests the
// scenario writes and removes: upstream's file source acts on each event
// of its directory watch, so a manifest removed is removed — its pod's
// containers stop within its grace period — even when it is written back
// at once; and once the directory is quiet, the pod that runs for each
// manifest is the one its last write describes.
type staticChecks struct {
	// removals are the containers running when their static pod's
	// manifest was removed, by container ID.
	removals map[string]*staticRemoval
	// versions is the last version written of each manifest present
	// (static_names.go's propManifest), by name.
	versions map[string]int
	// agentGen and upSince: the agent incarnation (restarts; -1 when
	// none runs) the last check saw, and since when it runs.
	agentGen int
	upSince  time.Duration
	// supersededAt is when each version written of a manifest stopped
	// being the one to run — a newer version written over it, or the
	// manifest removed — by name and version; a version written again
	// is current again (the same manifest, the same pod).
	supersededAt map[string]map[int]time.Duration
	// judged are the sandboxes and containers static-superseded-never-
	// starts has judged (each once: its creation time never moves).
	judged map[string]bool
	// dirUnreadable is when the manifest-dir-unreadable fault point last
	// fired (-1: never): a scan that failed keeps the pods read before.
	dirUnreadable time.Duration
}

// staticRemoval is one container that must stop because its manifest was
// removed.
type staticRemoval struct {
	pod, container string
	at, deadline   time.Duration
	agentGen       int // the agent's incarnation at the removal
	reported       bool
}

func newStaticChecks() *staticChecks {
	return &staticChecks{removals: map[string]*staticRemoval{}, versions: map[string]int{}, agentGen: -1,
		supersededAt: map[string]map[int]time.Duration{}, judged: map[string]bool{}, dirUnreadable: -1}
}

// ManifestWritten records that the scenario wrote version of static pod
// name's manifest: the version written before, if another, is superseded
// now.
func (c *Checker) ManifestWritten(name string, version int) {
	if prev, ok := c.stc.versions[name]; ok && prev != version {
		c.stc.supersede(name, prev, c.h.K.Elapsed())
	}
	delete(c.stc.supersededAt[name], version)
	c.stc.versions[name] = version
}

// supersede records that version of manifest name stopped being the one
// to run at t.
func (s *staticChecks) supersede(name string, version int, t time.Duration) {
	if s.supersededAt[name] == nil {
		s.supersededAt[name] = map[int]time.Duration{}
	}
	s.supersededAt[name][version] = t
}

// ManifestRemoved records that the scenario removed static pod name's
// manifest (written back at once or not): every container of the pod
// running now must stop within its grace period — when the agent's watch
// was up to see the removal.
func (c *Checker) ManifestRemoved(name string) {
	if prev, ok := c.stc.versions[name]; ok {
		c.stc.supersede(name, prev, c.h.K.Elapsed())
	}
	delete(c.stc.versions, name)
	c.trackAgent()
	now := c.h.K.Elapsed()
	if c.stc.agentGen < 0 || now-c.stc.upSince < watchSettle {
		return
	}
	full := "kube-system/" + name + "-" + c.h.NodeName
	static := staticSandboxes(c.truth().sandboxes)
	bound := max(time.Duration(staticGrace(name))*time.Second, minStopTimeout)
	for _, ct := range c.truth().containers {
		if static[ct.PodUID] != full || ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if _, ok := c.stc.removals[ct.ID]; !ok {
			c.stc.removals[ct.ID] = &staticRemoval{pod: full + " (" + string(ct.PodUID) + ")", container: ct.Name,
				at: now, deadline: now + bound + graceSlack, agentGen: c.stc.agentGen}
		}
	}
}

// trackAgent notes when the running agent incarnation started, as far as
// the checks see it.
func (c *Checker) trackAgent() {
	gen := -1
	if c.h.Agent() != nil {
		gen = c.h.Restarts()
	}
	if gen != c.stc.agentGen {
		c.stc.agentGen, c.stc.upSince = gen, c.h.K.Elapsed()
	}
}

// staticDeadlinePassed reports whether a removed manifest's container not
// yet reported has reached its deadline.
func (c *Checker) staticDeadlinePassed() bool {
	now := c.h.K.Elapsed()
	for _, r := range c.stc.removals {
		if !r.reported && now > r.deadline {
			return true
		}
	}
	return false
}

// checkStaticRemovals: static-removal-stops — a container running when
// its static pod's manifest was removed is stopped within the pod's
// grace period (at least the runtime's least stop timeout) plus
// graceSlack, whether or not the manifest was written back since (the
// kubelet's watch sees the deletion on its own; the same manifest back
// is a new life of the same UID). An agent crash or restart since the
// removal excuses it (the new agent never saw the removal, and finds the
// manifest back), as does a runtime impairment around it (a stop held
// back).
func (c *Checker) checkStaticRemovals(containers []RuntimeContainer) {
	now := c.h.K.Elapsed()
	running := map[string]bool{}
	for _, ct := range containers {
		if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running[ct.ID] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.stc.removals)) {
		r := c.stc.removals[id]
		excused := c.stc.agentGen != r.agentGen || c.suite.runtimeImpaired >= r.at-graceSlack
		switch {
		case !running[id] || excused:
			delete(c.stc.removals, id)
		case now > r.deadline && !r.reported:
			r.reported = true
			c.fail("static-removal-stops", "container %s of static pod %s still runs %v after its manifest was removed (allowed %v)",
				r.container, r.pod, now-r.at, r.deadline-r.at)
		}
	}
}

// staticVersionsSettled is static-latest, for the settled world: each
// manifest present runs the pod its last write describes — its one
// running container carries that write's VERSION, and its mirror pod
// (not being deleted) mirrors that pod (hash annotation: the running
// pod's UID) with that VERSION in its spec; a removed manifest has
// neither a running container nor a mirror pod. It returns one line per
// static pod that differs.
func (c *Checker) staticVersionsSettled() []string {
	static := staticSandboxes(c.h.Runtime.TrueSandboxes())
	runs := map[string]map[string]string{} // full name → pod UID → VERSION
	for _, ct := range TrueContainers(c.h) {
		name, ok := static[ct.PodUID]
		if !ok || ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if runs[name] == nil {
			runs[name] = map[string]string{}
		}
		runs[name][string(ct.PodUID)] = c.containerVersion(ct.ID)
	}
	var out []string
	for _, name := range staticNames {
		full := "kube-system/" + name + "-" + c.h.NodeName
		mirror, hasMirror := APIPod(c.h, "kube-system", name+"-"+c.h.NodeName)
		if hasMirror && mirror.DeletionTimestamp != nil {
			hasMirror = false
		}
		v, present := c.stc.versions[name]
		if !present {
			if len(runs[full]) > 0 || hasMirror {
				out = append(out, fmt.Sprintf("static pod %s: manifest removed, yet running %v, mirror pod present %v", full, runs[full], hasMirror))
			}
			continue
		}
		want := fmt.Sprint(v)
		if len(runs[full]) != 1 {
			out = append(out, fmt.Sprintf("static pod %s: running %v, want one pod of version %s", full, runs[full], want))
			continue
		}
		uid := slices.Collect(maps.Keys(runs[full]))[0]
		if got := runs[full][uid]; got != want {
			out = append(out, fmt.Sprintf("static pod %s: runs version %s (%s), want the last written %s", full, got, uid, want))
		}
		switch {
		case !hasMirror:
			out = append(out, fmt.Sprintf("static pod %s: no mirror pod", full))
		case mirror.Annotations[podsource.AnnotationConfigMirror] != uid || specVersion(mirror.Spec.Containers) != want:
			out = append(out, fmt.Sprintf("static pod %s: mirror pod mirrors %s at version %s, want %s at version %s",
				full, mirror.Annotations[podsource.AnnotationConfigMirror], specVersion(mirror.Spec.Containers), uid, want))
		}
	}
	return out
}

// containerVersion is the VERSION the runtime's container id was created
// with ("" when it has none).
func (c *Checker) containerVersion(id string) string {
	cfg, ok := c.h.Runtime.TrueContainerConfig(id)
	if !ok {
		return ""
	}
	for _, e := range cfg.GetEnvs() {
		if e.GetKey() == "VERSION" {
			return string(e.GetValue())
		}
	}
	return ""
}

// specVersion is the VERSION a pod spec's first container sets ("" when
// none).
func specVersion(cs []corev1.Container) string {
	if len(cs) == 0 {
		return ""
	}
	for _, e := range cs[0].Env {
		if e.Name == "VERSION" {
			return e.Value
		}
	}
	return ""
}

// staticVersionAnnotation is the annotation the scenarios' manifests carry
// their version in (propManifest): it reaches the pod's sandbox config
// and its mirror pod, so the checker tells the versions apart without
// computing the agent's UIDs.
const staticVersionAnnotation = "lockstep.test/version"

// supersededSlack is how late after a newer manifest is written the
// agent may still act on the version it supersedes: a step begun before
// (one runtime or API call at the same virtual instant), and the
// checker's step.
const supersededSlack = 100 * time.Millisecond

// staticVersionOf is the static pod name (without the node suffix) and
// manifest version an object with annotations and full pod name name
// stands for; ok is false for anything but a scenario's versioned static
// pod.
func (c *Checker) staticVersionOf(annotations map[string]string, name string) (string, int, bool) {
	v, err := strconv.Atoi(annotations[staticVersionAnnotation])
	if err != nil || annotations[staticVersionAnnotation] == "" {
		return "", 0, false
	}
	return strings.TrimSuffix(name, "-"+c.h.NodeName), v, true
}

// supersededBefore returns when version of manifest name was superseded,
// if it was more than supersededSlack before at and nothing excuses the
// agent for acting on it then: a runtime or API impairment around the
// supersession, or a failed scan of the manifest directory since (the
// newer manifest unseen).
func (c *Checker) supersededBefore(name string, version int, at time.Duration) (time.Duration, bool) {
	s, ok := c.stc.supersededAt[name][version]
	if !ok || at <= s+supersededSlack {
		return 0, false
	}
	if c.suite.runtimeImpaired >= s-supersededSlack || c.stc.dirUnreadable >= s-supersededSlack {
		return 0, false
	}
	return s, true
}

// checkStaticSuperseded: static-superseded-never-starts — once a newer
// version of a static pod's manifest is written (or the manifest is
// removed), the version it supersedes is never started: no sandbox and
// no container of it is created after that (beyond supersededSlack), as
// upstream's pod workers drop a static pod removed from its source before
// its turn to start and start only the one its source holds.
func (c *Checker) checkStaticSuperseded() {
	t := c.truth()
	versionOf := map[string]int{} // pod UID → version
	nameOf := map[string]string{} // pod UID → static pod name
	for _, sb := range t.sandboxes {
		name, v, ok := c.staticVersionOf(sb.Annotations, sb.GetMetadata().GetName())
		if !ok {
			continue
		}
		uid := sb.GetMetadata().GetUid()
		versionOf[uid], nameOf[uid] = v, name
		c.judgeStaticStart("sandbox "+sb.Id, uid, name, v, sb.CreatedAt)
	}
	for _, ct := range t.raw {
		uid := ct.Labels[podstate.LabelPodUID]
		if v, ok := versionOf[uid]; ok {
			c.judgeStaticStart("container "+ct.GetMetadata().GetName()+" "+ct.Id, uid, nameOf[uid], v, ct.CreatedAt)
		}
	}
}

// judgeStaticStart judges, once, the creation at created (unix
// nanoseconds) of what (of pod uid, version v of manifest name).
func (c *Checker) judgeStaticStart(what, uid, name string, v int, created int64) {
	if c.stc.judged[what] {
		return
	}
	c.stc.judged[what] = true
	at := time.Unix(0, created).Sub(c.epoch())
	if s, ok := c.supersededBefore(name, v, at); ok {
		c.fail("static-superseded-never-starts", "static pod %s version %d (%s): %s created %v after a newer manifest superseded it (at %v)",
			name, v, uid, what, at-s, s)
	}
}

// onWriteMirror: mirror-follows-current — the agent creates a mirror
// pod, or writes its status, only for the version of the static pod that
// is current: never, beyond supersededSlack, for a version a newer
// manifest (or the manifest's removal) superseded, as upstream makes the
// mirror pod in the sync of the pod that runs and writes to it only the
// status of the static pod its full name translates to.
func (c *Checker) onWriteMirror(r apiserver.Record) {
	p := r.Pod
	if r.Actor != apiserver.ActorAgent || (r.Verb != apiserver.VerbCreate && r.Verb != apiserver.VerbPatchStatus) {
		return
	}
	if _, mirror := p.Annotations[podsource.AnnotationConfigMirror]; !mirror {
		return
	}
	name, v, ok := c.staticVersionOf(p.Annotations, p.Name)
	if !ok {
		return
	}
	at := r.At.Sub(c.epoch())
	if s, late := c.supersededBefore(name, v, at); late {
		what := "status written (phase " + string(p.Status.Phase) + ")"
		if r.Verb == apiserver.VerbCreate {
			what = "created"
		}
		c.fail("mirror-follows-current", "mirror pod %s/%s of version %d %s %v after a newer manifest superseded that version (at %v)",
			p.Namespace, p.Name, v, what, at-s, s)
	}
}

// epoch is the virtual clock's start: times since it compare with the
// checker's elapsed times.
func (c *Checker) epoch() time.Time { return c.h.K.Now().Add(-c.h.K.Elapsed()) }
