package scenarios

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/scenarios/refmodel"
)

// sidecarChecks is what sidecar-order remembers.
type sidecarChecks struct {
	// seen: container instances already checked, by ID.
	seen map[string]bool
	// firstStart: per sandbox ID and sidecar name, when the sidecar's
	// first instance there started.
	firstStart map[string]map[string]time.Time
}

func newSidecarChecks() *sidecarChecks {
	return &sidecarChecks{seen: map[string]bool{}, firstStart: map[string]map[string]time.Time{}}
}

// runsOnce reports whether container name of pod uid may never run a
// second instance (never-restart): an ephemeral container never; in a pod
// none of whose regular containers may run again (refmodel.RunsOnce: a
// restartPolicy Never pod, or every container's own policy says so),
// every container but the sidecars. Other pods get new sandboxes, where
// their containers run again.
func (c *Checker) runsOnce(uid types.UID, name string) bool {
	spec := c.suite.specs[uid]
	if spec == nil {
		return c.policy[uid] == corev1.RestartPolicyNever
	}
	for _, ec := range spec.EphemeralContainers {
		if ec.Name == name {
			return true
		}
	}
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == name && refmodel.IsSidecar(&spec.InitContainers[i]) {
			return false
		}
	}
	return refmodel.RunsOnce(&corev1.Pod{Spec: *spec})
}

// sidecarNamed reports whether name is a sidecar of pod uid's last spec.
func (s *suiteState) sidecarNamed(uid types.UID, name string) bool {
	spec := s.specs[uid]
	if spec == nil {
		return false
	}
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == name {
			return refmodel.IsSidecar(&spec.InitContainers[i])
		}
	}
	return false
}

// checkSidecarOrder: in a pod's sandbox, no regular container starts
// before every sidecar of the pod has started there (each instance is
// checked once, by its start time in the runtime).
func (c *Checker) checkSidecarOrder() {
	sc := c.sidecars
	type started struct {
		ct *runtimeapi.Container
		at time.Time
	}
	var regular []started
	for _, ct := range c.truth().raw {
		if sc.seen[ct.Id] || ct.State == runtimeapi.ContainerState_CONTAINER_CREATED {
			continue
		}
		sc.seen[ct.Id] = true
		uid := types.UID(ct.Labels[podstate.LabelPodUID])
		spec := c.suite.specs[uid]
		if spec == nil {
			continue
		}
		ns, ok := c.h.Runtime.TrueStartedAt(ct.Id)
		if !ok {
			continue
		}
		at := time.Unix(0, ns)
		name := ct.Metadata.GetName()
		switch {
		case c.suite.sidecarNamed(uid, name):
			m := sc.firstStart[ct.PodSandboxId]
			if m == nil {
				m = map[string]time.Time{}
				sc.firstStart[ct.PodSandboxId] = m
			}
			if first, ok := m[name]; !ok || at.Before(first) {
				m[name] = at
			}
		case isRegular(spec, name):
			regular = append(regular, started{ct, at})
		}
	}
	for _, r := range regular {
		uid := types.UID(r.ct.Labels[podstate.LabelPodUID])
		spec := c.suite.specs[uid]
		for i := range spec.InitContainers {
			side := &spec.InitContainers[i]
			if !refmodel.IsSidecar(side) {
				continue
			}
			first, ok := c.sidecars.firstStart[r.ct.PodSandboxId][side.Name]
			switch {
			case !ok:
				c.fail("sidecar-order", "container %s of pod %s started at %v while its sidecar %s had never started in sandbox %s",
					r.ct.Metadata.GetName(), uid, r.at, side.Name, r.ct.PodSandboxId)
			case first.After(r.at):
				c.fail("sidecar-order", "container %s of pod %s started at %v, before its sidecar %s (first start %v)",
					r.ct.Metadata.GetName(), uid, r.at, side.Name, first)
			}
		}
	}
}

func isRegular(spec *corev1.PodSpec, name string) bool {
	for _, c := range spec.Containers {
		if c.Name == name {
			return true
		}
	}
	return false
}
