package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podsource"
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
	return &staticChecks{removals: map[string]*staticRemoval{}, versions: map[string]int{}, agentGen: -1}
}

// ManifestWritten records that the scenario wrote version of static pod
// name's manifest.
func (c *Checker) ManifestWritten(name string, version int) { c.stc.versions[name] = version }

// ManifestRemoved records that the scenario removed static pod name's
// manifest (written back at once or not): every container of the pod
// running now must stop within its grace period — when the agent's watch
// was up to see the removal.
func (c *Checker) ManifestRemoved(name string) {
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
