package fakecri

import (
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerCgroup is the cgroup the runtime puts a container (or a
// sandbox's pause process) in: <sandbox CgroupParent>/<id>, as runc does
// under the cgroupfs driver; "" when the sandbox names no parent.
func ContainerCgroup(parent, id string) string {
	if parent == "" {
		return ""
	}
	return strings.TrimSuffix(parent, "/") + "/" + id
}

// TrueCgroupUsers returns the IDs of the ready sandboxes and running
// containers whose cgroups lie at or under path: the processes that keep
// the cgroup at path busy (it cannot be removed while any is there). For
// simulators and checkers, like TrueContainers: it never blocks.
func (r *Runtime) TrueCgroupUsers(path string) []string {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	under := func(cg string) bool {
		return cg != "" && (cg == path || strings.HasPrefix(cg, strings.TrimSuffix(path, "/")+"/"))
	}
	var out []string
	for _, sb := range r.sandboxOrder {
		if sb.removed {
			continue
		}
		parent := sb.config.GetLinux().GetCgroupParent()
		if sb.state == runtimeapi.PodSandboxState_SANDBOX_READY && under(ContainerCgroup(parent, sb.id)) {
			out = append(out, sb.id)
		}
		for _, c := range sb.containers {
			if !c.removed && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && under(ContainerCgroup(parent, c.id)) {
				out = append(out, c.id)
			}
		}
	}
	return out
}
