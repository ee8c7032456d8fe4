package scenarios

import (
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// checkVolumes checks volumes-kept: the volumes of a pod that has not
// terminated are never torn down. A running container's pod has not
// terminated, so every mount it was created with from a pod volume (below
// <pods>/<uid>/volumes; hostPath volumes are the host's) must still exist.
func (c *Checker) checkVolumes(truth []RuntimeContainer) {
	if c.volumesReported == nil {
		c.volumesReported = map[string]bool{}
	}
	pods := podspec.PodsDir("") + "/"
	for _, ct := range truth {
		if ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		for _, m := range c.h.Runtime.TrueMounts(ct.ID) {
			rest, ok := strings.CutPrefix(m.GetHostPath(), pods)
			if _, sub, _ := strings.Cut(rest, "/"); !ok || !strings.HasPrefix(sub, "volumes/") {
				continue // not a pod volume (a termination message file is not one)
			}
			if _, err := c.h.Files.Stat(m.GetHostPath()); err == nil {
				continue
			}
			key := ct.ID + " " + m.GetHostPath()
			if !c.volumesReported[key] {
				c.volumesReported[key] = true
				c.fail("volumes-kept", "container %s/%s (%s) runs, but its volume %s is gone", ct.PodUID, ct.Name, ct.ID, m.GetHostPath())
			}
		}
	}
}
