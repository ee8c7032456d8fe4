package fakecri

import (
	"io/fs"
	"path"
	"strings"
	"time"

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

// WrittenUnder is how many bytes the containers have written, by their
// FAKECRI_WRITE scripts, into host directory dir (through mounts whose
// host path is dir or under it), now. A container writes while it runs;
// what it wrote stays while the runtime keeps it (until it is removed).
// The simulator's disk usage port adds this to the files it holds.
func (r *Runtime) WrittenUnder(dir string) uint64 {
	r.mu.Lock()
	defer r.unlock()
	return r.writtenUnderLocked(dir, r.now())
}

// WrittenUnderAt is WrittenUnder as of an earlier instant at (unix
// nanoseconds), by the containers the runtime still keeps: for invariant
// checkers that judge a decision taken then.
func (r *Runtime) WrittenUnderAt(dir string, at int64) uint64 {
	r.mu.Lock()
	defer r.unlock()
	return r.writtenUnderLocked(dir, min(at, r.now()))
}

func (r *Runtime) writtenUnderLocked(dir string, now int64) uint64 {
	dir = path.Clean(dir)
	var total uint64
	for _, c := range r.containerOrder {
		if c.removed || len(c.script.writes) == 0 {
			continue
		}
		for _, m := range c.config.GetMounts() {
			hp := path.Clean(m.GetHostPath())
			if hp != dir && !strings.HasPrefix(hp, dir+"/") {
				continue
			}
			total = addSatU(total, c.writtenAt(now, path.Clean(m.GetContainerPath())))
		}
	}
	return total
}

// writtenAt is what c has written under its mount at containerPath by t
// ("" for everything it wrote).
func (c *container) writtenAt(t int64, containerPath string) uint64 {
	if c.startedAt == 0 || t <= c.startedAt {
		return 0
	}
	end := t
	if c.finishedAt != 0 && c.finishedAt < end {
		end = c.finishedAt
	}
	var total uint64
	for _, w := range c.script.writes {
		if containerPath == "" || w.key == containerPath || strings.HasPrefix(w.key, containerPath+"/") {
			total = addSatU(total, uint64(w.tl.at(time.Duration(end-c.startedAt)).value))
		}
	}
	return total
}
