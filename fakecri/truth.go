package fakecri

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TrueContainers lists every container as it is at the clock's now, in
// creation order, bypassing every injected fault (staleness, errors,
// latency, hangs). It is for simulators and invariant checkers, not a CRI
// call: it never blocks.
func (r *Runtime) TrueContainers() []*runtimeapi.Container {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	out := []*runtimeapi.Container{}
	candidates, _ := r.containersAt("", "", nil, now, false)
	for _, c := range candidates {
		state, visible := c.stateAt(now, false)
		if !visible {
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id:           c.id,
			PodSandboxId: c.sb.id,
			Metadata:     &runtimeapi.ContainerMetadata{Name: c.config.GetMetadata().GetName(), Attempt: c.config.GetMetadata().GetAttempt()},
			Image:        &runtimeapi.ImageSpec{Image: c.imageSpec.GetImage()},
			ImageRef:     c.imageID,
			State:        state,
			CreatedAt:    c.createdAt,
			Labels:       maps.Clone(c.config.GetLabels()),
			Annotations:  maps.Clone(c.config.GetAnnotations()),
		})
	}
	return out
}

// truthView is the truth views cached at a generation: rebuilt only
// after the state they show has changed.
type truthView struct {
	containers    []*runtimeapi.Container
	containersGen uint64
	sandboxes     []*runtimeapi.PodSandbox
	sandboxesGen  uint64
	images        []*runtimeapi.Image
	imagesGen     uint64
}

// TrueGeneration brings the runtime up to the clock's now (as every truth
// read does) and returns its generation: a counter that moves whenever a
// container or sandbox is created, started, exits, is stopped, removed or
// resized, or a container is first asked to stop or sent SIGTERM (what
// TrueStopAskedAt and TrueStopRequested report), so that a checker can tell that nothing it reads from the truth
// views has changed since it last looked.
func (r *Runtime) TrueGeneration() uint64 {
	r.mu.Lock()
	defer r.unlock()
	r.advance(r.now())
	return r.gen
}

// TrueContainersView is TrueContainers without the copies: the list,
// its containers and their label and annotation maps are shared with the
// runtime and with every other caller until the next change, and must
// not be modified. It costs nothing while the runtime is unchanged.
func (r *Runtime) TrueContainersView() []*runtimeapi.Container {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	if r.view.containers != nil && r.view.containersGen == r.gen {
		return r.view.containers
	}
	out := []*runtimeapi.Container{}
	candidates, _ := r.containersAt("", "", nil, now, false)
	for _, c := range candidates {
		state, visible := c.stateAt(now, false)
		if !visible {
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id:           c.id,
			PodSandboxId: c.sb.id,
			Metadata:     &runtimeapi.ContainerMetadata{Name: c.config.GetMetadata().GetName(), Attempt: c.config.GetMetadata().GetAttempt()},
			Image:        &runtimeapi.ImageSpec{Image: c.imageSpec.GetImage()},
			ImageRef:     c.imageID,
			State:        state,
			CreatedAt:    c.createdAt,
			Labels:       c.config.GetLabels(),
			Annotations:  c.config.GetAnnotations(),
		})
	}
	r.view.containers, r.view.containersGen = out, r.gen
	return out
}

// TrueSandboxesView is TrueSandboxes without the copies, shared and
// read-only like TrueContainersView.
func (r *Runtime) TrueSandboxesView() []*runtimeapi.PodSandbox {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	if r.view.sandboxes != nil && r.view.sandboxesGen == r.gen {
		return r.view.sandboxes
	}
	out := []*runtimeapi.PodSandbox{}
	for _, sb := range r.sandboxOrder {
		state, visible := sb.stateAt(now, false)
		if !visible {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{
			Id:             sb.id,
			Metadata:       sb.config.GetMetadata(),
			State:          state,
			CreatedAt:      sb.createdAt,
			Labels:         sb.config.GetLabels(),
			Annotations:    sb.config.GetAnnotations(),
			RuntimeHandler: sb.handler,
		})
	}
	r.view.sandboxes, r.view.sandboxesGen = out, r.gen
	return out
}

// TrueContainerConfigView is TrueContainerConfig without the copy: the
// config container id was created with, shared with the runtime (it never
// changes), which must not be modified.
func (r *Runtime) TrueContainerConfigView(id string) (*runtimeapi.ContainerConfig, bool) {
	r.mu.Lock()
	defer r.unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil, false
	}
	return c.config, true
}

// TrueSandboxConfigView is TrueSandboxConfig without the copy: the config
// sandbox id was created with, shared with the runtime (it never
// changes), which must not be modified.
func (r *Runtime) TrueSandboxConfigView(id string) (*runtimeapi.PodSandboxConfig, bool) {
	r.mu.Lock()
	defer r.unlock()
	sb, ok := r.sandboxes[id]
	if !ok {
		return nil, false
	}
	return sb.config, true
}

// TrueSandboxes lists every sandbox as it is at the clock's now, in
// creation order, bypassing every injected fault, like TrueContainers. It
// is for simulators and invariant checkers, not a CRI call: it never
// blocks.
func (r *Runtime) TrueSandboxes() []*runtimeapi.PodSandbox {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	out := []*runtimeapi.PodSandbox{}
	for _, sb := range r.sandboxOrder {
		state, visible := sb.stateAt(now, false)
		if !visible {
			continue
		}
		out = append(out, sb.toCRI(state))
	}
	return out
}

// Exit is how a container exited, as the runtime knows it.
type Exit struct {
	Code   int32
	Reason string
	// FinishedAt is when it exited, in unix nanoseconds.
	FinishedAt int64
}

// TrueExit reports how container id exited, bypassing every injected
// fault; ok is false if it has not exited or is unknown. For invariant
// checkers, like TrueContainers.
func (r *Runtime) TrueExit(id string) (exit Exit, ok bool) {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	c := r.findContainerAt(id, now, false)
	if c == nil {
		return Exit{}, false
	}
	if st, _ := c.stateAt(now, false); st != runtimeapi.ContainerState_CONTAINER_EXITED {
		return Exit{}, false
	}
	return Exit{Code: c.exitCode, Reason: c.reason, FinishedAt: c.finishedAt}, true
}

// PastExit is a container that had exited by some instant, as
// TrueExitedAt lists it.
type PastExit struct {
	ID      string
	Name    string
	Attempt uint32
	// Labels are the container's labels (shared: do not modify).
	Labels map[string]string
	Exit
}

// TrueExitedAt lists the containers that had exited by t (unix
// nanoseconds, not after the clock's now) and were still in the runtime
// then, whether removed since or not, with how they exited, in creation
// order, bypassing every injected fault. Removed containers are
// remembered for the stale retention (5 minutes at least), so an instant
// older than that may miss some. For invariant checkers that judge a
// decision made at t from what the runtime held then, which a later
// removal (container garbage collection) must not hide.
func (r *Runtime) TrueExitedAt(t int64) []PastExit {
	r.mu.Lock()
	defer r.unlock()
	r.advance(r.now())
	var out []PastExit
	for _, c := range r.containerOrder {
		if state, ok := c.stateAt(t, true); !ok || state != exitedState {
			continue
		}
		out = append(out, PastExit{ID: c.id, Name: c.config.GetMetadata().GetName(), Attempt: c.config.GetMetadata().GetAttempt(),
			Labels: c.config.GetLabels(), Exit: Exit{Code: c.exitCode, Reason: c.reason, FinishedAt: c.finishedAt}})
	}
	return out
}

// TrueContainerConfig returns a copy of the config container id was
// created with, and false when no such container was ever created. Like
// TrueContainers it bypasses faults and never blocks.
func (r *Runtime) TrueContainerConfig(id string) (*runtimeapi.ContainerConfig, bool) {
	r.mu.Lock()
	defer r.unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil, false
	}
	return proto.Clone(c.config).(*runtimeapi.ContainerConfig), true
}

// TrueContainerResources returns a copy of the resources container id
// runs with now (its create config's, or the last
// UpdateContainerResources'), and false when no such container was ever
// created or it has none. Like TrueContainers it bypasses faults and
// never blocks.
func (r *Runtime) TrueContainerResources(id string) (*runtimeapi.LinuxContainerResources, bool) {
	r.mu.Lock()
	defer r.unlock()
	c, ok := r.containers[id]
	if !ok || c.resources == nil {
		return nil, false
	}
	return proto.Clone(c.resources).(*runtimeapi.LinuxContainerResources), true
}

// TrueSandboxConfig returns a copy of the config sandbox id was created
// with, and false when no such sandbox was ever created. Like
// TrueContainers it bypasses faults and never blocks.
func (r *Runtime) TrueSandboxConfig(id string) (*runtimeapi.PodSandboxConfig, bool) {
	r.mu.Lock()
	defer r.unlock()
	sb, ok := r.sandboxes[id]
	if !ok {
		return nil, false
	}
	return proto.Clone(sb.config).(*runtimeapi.PodSandboxConfig), true
}

// TrueStartedAt reports when container id started (unix nanoseconds),
// bypassing every injected fault; ok is false if it never started. For
// invariant checkers, like TrueContainers.
func (r *Runtime) TrueStartedAt(id string) (startedAt int64, ok bool) {
	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	c := r.findContainerAt(id, now, false)
	if c == nil || c.startedAt == 0 {
		return 0, false
	}
	return c.startedAt, true
}

// TrueStopAskedAt reports when StopContainer was first called for
// container id (unix nanoseconds), whether or not an injected fault failed
// or delayed that call: the moment the caller decided to stop it. ok is
// false if it was never asked, or was removed longer ago than the stale
// list retention. For invariant checkers, like TrueExit.
func (r *Runtime) TrueStopAskedAt(id string) (at int64, ok bool) {
	r.mu.Lock()
	defer r.unlock()
	c, found := r.containers[id]
	if !found {
		// Removed lately: its tombstone (kept for stale lists) knows.
		for _, t := range r.containerOrder {
			if t.id == id {
				c, found = t, true
				break
			}
		}
	}
	if !found || c.stopAskedAt == 0 {
		return 0, false
	}
	return c.stopAskedAt, true
}

// TrueSandboxLacksIP reports whether container id runs in a sandbox that
// came up without an IP though it is not on the host's network (the
// sandbox-IP fault, DropSandboxIPs): its pod's network never worked, and
// an agent replaces such a sandbox, stopping its containers. For invariant
// checkers, like TrueExit.
func (r *Runtime) TrueSandboxLacksIP(id string) bool {
	r.mu.Lock()
	defer r.unlock()
	c, found := r.containers[id]
	if !found {
		return false
	}
	hostNet := c.sb.config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
	return c.sb.ip == "" && !hostNet
}

// TrueStopRequested reports when container id was first sent SIGTERM by
// StopContainer (a timeout ≤ 0 kills without one), in unix nanoseconds, bypassing every injected fault; ok is false if it never
// was or is unknown. For invariant checkers, like TrueContainers.
func (r *Runtime) TrueStopRequested(id string) (at int64, ok bool) {
	r.mu.Lock()
	defer r.unlock()
	c, found := r.containers[id]
	if !found || c.termAt == 0 {
		return 0, false
	}
	return c.termAt, true
}

// ExecRecord is one ExecSync a container ran.
type ExecRecord struct {
	// Cmd is the command line, argv joined by single spaces.
	Cmd string
	// At is when the runtime ran it, in unix nanoseconds.
	At int64
	// Ended is when the call returned, in unix nanoseconds (0 while it
	// runs); Cut, that it returned because its caller's context ended
	// before the command answered (a hanging command); ContainerRan, that
	// the container still ran when it returned.
	Ended        int64
	Cut          bool
	ContainerRan bool
}

// TrueExecs lists the ExecSync calls container id ran (while it was
// running), oldest first, bypassing every injected fault. For invariant
// checkers, like TrueContainers.
func (r *Runtime) TrueExecs(id string) []ExecRecord {
	r.mu.Lock()
	defer r.unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil
	}
	return slices.Clone(c.execs)
}

// TrueImagesView is TrueImages without the copies, shared and read-only
// like TrueContainersView; it costs nothing until an image arrives or is
// removed.
func (r *Runtime) TrueImagesView() []*runtimeapi.Image {
	r.mu.Lock()
	defer r.unlock()
	if r.view.images != nil && r.view.imagesGen == r.images.gen {
		return r.view.images
	}
	out := make([]*runtimeapi.Image, 0, len(r.images.order))
	for _, img := range r.images.order {
		out = append(out, &runtimeapi.Image{Id: img.id, RepoTags: img.repoTags, RepoDigests: img.repoDigests, Size: img.size, Pinned: img.pinned})
	}
	r.view.images, r.view.imagesGen = out, r.images.gen
	return out
}

// TrueImages lists the images present, in the order they arrived,
// bypassing faults.
func (r *Runtime) TrueImages() []*runtimeapi.Image {
	r.mu.Lock()
	defer r.unlock()
	out := make([]*runtimeapi.Image, 0, len(r.images.order))
	for _, img := range r.images.order {
		out = append(out, &runtimeapi.Image{Id: img.id, RepoTags: slices.Clone(img.repoTags), RepoDigests: slices.Clone(img.repoDigests),
			Size: img.size, Pinned: img.pinned})
	}
	return out
}

// TrueResources is a container's Linux resources as they are now (those
// it was created with, changed by UpdateContainerResources): its cpuset
// is the CPUs it may run on. For invariant checkers, like TrueContainers.
func (r *Runtime) TrueResources(id string) (*runtimeapi.LinuxContainerResources, bool) {
	r.mu.Lock()
	defer r.unlock()
	c, ok := r.containers[id]
	if !ok || c.resources == nil {
		return nil, ok
	}
	return proto.Clone(c.resources).(*runtimeapi.LinuxContainerResources), true
}
