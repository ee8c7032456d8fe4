package fakecri

import (
	"io/fs"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// statFiles is the optional part of Files that lets the runtime check
// that a container's mount sources exist (the simulator's memfs has it).
type statFiles interface {
	Stat(path string) (fs.FileInfo, error)
}

// checkMounts refuses a container whose mount source does not exist, when
// the runtime's Files can tell: in the simulator, a container may start
// only once the agent has set up every volume it mounts.
func (r *Runtime) checkMounts(config *runtimeapi.ContainerConfig) error {
	sf, ok := r.cfg.Files.(statFiles)
	if !ok {
		return nil
	}
	for _, m := range config.GetMounts() {
		if _, err := sf.Stat(m.GetHostPath()); err != nil {
			return status.Errorf(codes.InvalidArgument, "container %q: mount source %s for %s: %v",
				config.GetMetadata().GetName(), m.GetHostPath(), m.GetContainerPath(), err)
		}
	}
	return nil
}

// TrueMounts returns the mounts a container was created with (nil for an
// unknown container), whatever faults the runtime is under.
func (r *Runtime) TrueMounts(id string) []*runtimeapi.Mount {
	r.mu.Lock()
	defer r.unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil
	}
	out := make([]*runtimeapi.Mount, 0, len(c.config.GetMounts()))
	for _, m := range c.config.GetMounts() {
		out = append(out, proto.Clone(m).(*runtimeapi.Mount))
	}
	return out
}
