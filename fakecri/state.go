package fakecri

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Short names for the states.
const (
	createdState = runtimeapi.ContainerState_CONTAINER_CREATED
	runningState = runtimeapi.ContainerState_CONTAINER_RUNNING
	exitedState  = runtimeapi.ContainerState_CONTAINER_EXITED
	readyState   = runtimeapi.PodSandboxState_SANDBOX_READY
	notReady     = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
)

// podUIDLabel is the label the kubelet puts on sandboxes and containers.
const podUIDLabel = "io.kubernetes.pod.uid"

// sandbox is a pod sandbox. Times are Unix nanoseconds, 0 when not yet.
type sandbox struct {
	id      string
	seq     uint64
	name    string
	config  *runtimeapi.PodSandboxConfig // owned copy
	handler string
	uid     string
	ip      string
	// addr is where its endpoints answer: ip, or Config.NodeAddress on
	// the host network ("" for none).
	addr  string
	ports []int // declared TCP container ports (declaredPorts)
	state runtimeapi.PodSandboxState

	createdAt, stoppedAt, removedAt int64
	removed                         bool

	containers []*container // live containers, creation order
}

// container is a container and its scripted process.
type container struct {
	id     string
	seq    uint64
	sb     *sandbox
	name   string
	config *runtimeapi.ContainerConfig // owned copy
	script *script
	// execs records the ExecSync calls run in the container (for
	// checkers: TrueExecs).
	execs []ExecRecord

	imageSpec   *runtimeapi.ImageSpec // as requested
	imageID     string
	imageTag    string // first repo tag at creation, "" if none
	imageDigest string // first repo digest at creation, "" if none
	logPath     string
	resources   *runtimeapi.LinuxContainerResources
	limitSince  int64 // when the current resources took effect (UpdateContainerResources)

	state                                       runtimeapi.ContainerState
	createdAt, startedAt, finishedAt, removedAt int64
	exitCode                                    int32
	reason, message                             string
	starting, removed                           bool

	// Signals: when SIGTERM was delivered and when SIGKILL is due (0: not).
	termAt, killAt int64
	// stopAskedAt is when StopContainer was first called for it, whatever
	// came of the call (an injected fault may have failed or delayed it).
	stopAskedAt int64
	// The next scheduled exit (valid while exitIdx >= 0).
	exitAt     int64
	nextCode   int32
	nextReason string
	exitIdx    int

	// Periodic log lines (valid while logIdx >= 0).
	logNext  int64
	logIdx   int
	logLines uint64 // lines written since start
	logBytes uint64 // bytes written since the log file was (re)opened
}

// memoryLimit is the container's memory limit in bytes, 0 if none.
func (c *container) memoryLimit() uint64 {
	if l := c.resources.GetMemoryLimitInBytes(); l > 0 {
		return uint64(l)
	}
	return 0
}

// podUID returns the sandbox's pod UID (label, else metadata).
func podUIDOf(cfg *runtimeapi.PodSandboxConfig) string {
	if uid := cfg.GetLabels()[podUIDLabel]; uid != "" {
		return uid
	}
	return cfg.GetMetadata().GetUid()
}

// getSandbox finds a live sandbox by ID or unique ID prefix.
func (r *Runtime) getSandbox(id string) (*sandbox, error) {
	if sb, ok := r.sandboxes[id]; ok {
		return sb, nil
	}
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "pod sandbox ID must not be empty")
	}
	var found *sandbox
	for _, sb := range r.sandboxOrder {
		if !sb.removed && strings.HasPrefix(sb.id, id) {
			if found != nil {
				return nil, status.Errorf(codes.InvalidArgument, "pod sandbox ID prefix %q is ambiguous", id)
			}
			found = sb
		}
	}
	if found == nil {
		return nil, status.Errorf(codes.NotFound, "pod sandbox %q not found", id)
	}
	return found, nil
}

// getContainer finds a live container by ID or unique ID prefix.
func (r *Runtime) getContainer(id string) (*container, error) {
	if c, ok := r.containers[id]; ok {
		return c, nil
	}
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "container ID must not be empty")
	}
	var found *container
	for _, c := range r.containerOrder {
		if !c.removed && strings.HasPrefix(c.id, id) {
			if found != nil {
				return nil, status.Errorf(codes.InvalidArgument, "container ID prefix %q is ambiguous", id)
			}
			found = c
		}
	}
	if found == nil {
		return nil, status.Errorf(codes.NotFound, "container %q not found", id)
	}
	return found, nil
}

// isNotFound reports whether err is a NotFound status.
func isNotFound(err error) bool {
	return status.Code(err) == codes.NotFound
}

// dropContainer removes c from the live state, keeping a tombstone for
// stale lists. Caller emits the DELETED event.
func (r *Runtime) dropContainer(c *container, now int64) {
	r.unschedule(c)
	c.removed, c.removedAt = true, now
	r.gen++
	delete(r.containers, c.id)
	r.unindexContainer(c)
	delete(r.names, c.name)
	sb := c.sb
	for i, o := range sb.containers {
		if o == c {
			sb.containers = append(sb.containers[:i], sb.containers[i+1:]...)
			break
		}
	}
	r.containerTombs++
	if r.containerTombs > max(1024, len(r.containers), r.containerCompactAt) {
		r.compactContainers(now)
	}
}

// dropSandbox removes sb (which has no containers left) from the live state.
func (r *Runtime) dropSandbox(sb *sandbox, now int64) {
	sb.removed, sb.removedAt = true, now
	r.gen++
	delete(r.sandboxes, sb.id)
	r.unindexSandbox(sb)
	r.unindexAddr(sb)
	r.touched(sb)
	delete(r.names, sb.name)
	r.sandboxTombs++
	if r.sandboxTombs > max(1024, len(r.sandboxes), r.sandboxCompactAt) {
		r.compactSandboxes(now)
	}
}

// compactContainers forgets tombstones older than the stale retention.
func (r *Runtime) compactContainers(now int64) {
	horizon := addSat(now, -durNS(r.faults.retention))
	kept := r.containerOrder[:0]
	tombs := 0
	for _, c := range r.containerOrder {
		if c.removed {
			if c.removedAt < horizon {
				continue
			}
			tombs++
		}
		kept = append(kept, c)
	}
	clear(r.containerOrder[len(kept):])
	r.containerOrder, r.containerTombs, r.containerCompactAt = kept, tombs, 2*tombs
}

// compactSandboxes forgets tombstones older than the stale retention.
func (r *Runtime) compactSandboxes(now int64) {
	horizon := addSat(now, -durNS(r.faults.retention))
	kept := r.sandboxOrder[:0]
	tombs := 0
	for _, sb := range r.sandboxOrder {
		if sb.removed {
			if sb.removedAt < horizon {
				continue
			}
			tombs++
		}
		kept = append(kept, sb)
	}
	clear(r.sandboxOrder[len(kept):])
	r.sandboxOrder, r.sandboxTombs, r.sandboxCompactAt = kept, tombs, 2*tombs
}
