package scenarios

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// propagationChecks is the state of the mount propagation invariants:
// the pods as users wrote them (the spec says who is privileged) and the
// containers already judged (each once, when the checker first sees it).
type propagationChecks struct {
	specs  map[types.UID]*corev1.Pod
	judged map[string]bool
}

func newPropagationChecks() *propagationChecks {
	return &propagationChecks{specs: map[types.UID]*corev1.Pod{}, judged: map[string]bool{}}
}

// onWritePropagation keeps the pods users create or update.
func (c *Checker) onWritePropagation(r apiserver.Record) {
	if r.Actor == apiserver.ActorUser && (r.Verb == apiserver.VerbCreate || r.Verb == apiserver.VerbUpdate) {
		c.propagation.specs[r.UID] = r.Pod
	}
}

// checkPropagation checks, for every container the runtime was asked to
// create, from the kubelet's rules and containerd's (not from the
// agent's code):
//
//   - propagation-shared: a mount below the agent's root directory with
//     Bidirectional or HostToContainer propagation is only created once
//     the root directory lies on a shared mount (the kubelet makes it
//     rshared at start, setupDataDirs; containerd refuses such a mount on
//     a private one). The root directory is never made private again, so
//     a container first seen with the root shared was created after it
//     was made shared (each check follows every simulated step);
//   - propagation-privileged: a Bidirectional mount only in a container
//     the pod's spec says is privileged (API validation's rule, which
//     the kubelet relies on; a pod whose spec the checker has not seen
//     written by a user, a static pod, is not judged).
func (c *Checker) checkPropagation(truth []RuntimeContainer) {
	root := podspec.DefaultRootDir + "/"
	for _, ct := range truth {
		if c.propagation.judged[ct.ID] {
			continue
		}
		c.propagation.judged[ct.ID] = true
		for _, m := range c.trueMounts(ct.ID) {
			prop := m.GetPropagation()
			if prop == runtimeapi.MountPropagation_PROPAGATION_PRIVATE {
				continue
			}
			if strings.HasPrefix(m.GetHostPath(), root) && !c.h.Mounts.Shared(m.GetHostPath()) {
				c.fail("propagation-shared", "container %s/%s (%s) was created with %s propagation of %s, which is not on a shared mount (the root directory was not made shared)",
					ct.PodUID, ct.Name, ct.ID, prop, m.GetHostPath())
			}
			if prop == runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL && c.specUnprivileged(ct.PodUID, ct.Name) {
				c.fail("propagation-privileged", "container %s/%s (%s) is not privileged but was created with Bidirectional propagation of %s",
					ct.PodUID, ct.Name, ct.ID, m.GetHostPath())
			}
		}
	}
}

// specUnprivileged reports whether the user's spec of pod uid has a
// container name (of any kind) that is not privileged (false when the
// spec or the container is unknown).
func (c *Checker) specUnprivileged(uid types.UID, name string) bool {
	pod := c.propagation.specs[uid]
	if pod == nil {
		return false
	}
	var all []corev1.Container
	all = append(all, pod.Spec.InitContainers...)
	all = append(all, pod.Spec.Containers...)
	for _, ct := range all {
		if ct.Name == name {
			sc := ct.SecurityContext
			return sc == nil || sc.Privileged == nil || !*sc.Privileged
		}
	}
	return false
}
