package fakecri

import (
	"context"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CreateContainer creates a container (state CREATED) in a READY sandbox.
// Its FAKECRI_ environment variables script its behaviour; a bad value is
// an InvalidArgument error naming the variable and the value.
func (r *Runtime) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	if err := r.enter(ctx, "CreateContainer", callTarget{sandboxID: podSandboxID}); err != nil {
		return "", err
	}
	md := config.GetMetadata()
	if md == nil || md.GetName() == "" {
		return "", status.Error(codes.InvalidArgument, "container config must include metadata with a name")
	}
	if config.GetImage().GetImage() == "" {
		return "", status.Errorf(codes.InvalidArgument, "container %q: config must include an image", md.GetName())
	}
	sc, err := parseScript(config)
	if err != nil {
		return "", status.Errorf(codes.InvalidArgument, "container %q: %v", md.GetName(), err)
	}
	if err := r.checkMounts(config); err != nil {
		return "", err
	}

	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	sb, err := r.getSandbox(podSandboxID)
	if err != nil {
		return "", err
	}
	if sb.state != readyState {
		return "", status.Errorf(codes.FailedPrecondition, "container %q: pod sandbox %q is not ready", md.GetName(), sb.id)
	}
	img, err := r.images.resolve(config.GetImage().GetImage())
	if err != nil {
		return "", status.Errorf(codes.NotFound, "container %q: image %q not found", md.GetName(), config.GetImage().GetImage())
	}
	smd := sb.config.GetMetadata()
	name := strings.Join([]string{md.GetName(), smd.GetName(), smd.GetNamespace(), smd.GetUid(), fmt.Sprint(md.GetAttempt())}, "_")
	if other, ok := r.names[name]; ok {
		return "", status.Errorf(codes.AlreadyExists, "failed to reserve container name %q: name is reserved for %q", name, other)
	}
	if sandboxConfig == nil {
		sandboxConfig = sb.config
	}
	r.objSeq++
	c := &container{
		id:        r.newID(),
		seq:       r.objSeq,
		sb:        sb,
		name:      name,
		config:    proto.Clone(config).(*runtimeapi.ContainerConfig),
		script:    sc,
		imageSpec: proto.Clone(config.GetImage()).(*runtimeapi.ImageSpec),
		imageID:   img.id,
		state:     createdState,
		createdAt: now,
		exitIdx:   -1,
		logIdx:    -1,
	}
	if len(img.repoTags) > 0 {
		c.imageTag = img.repoTags[0]
	}
	if len(img.repoDigests) > 0 {
		c.imageDigest = img.repoDigests[0]
	}
	if res := config.GetLinux().GetResources(); res != nil {
		c.resources = proto.Clone(res).(*runtimeapi.LinuxContainerResources)
	}
	if dir, p := sandboxConfig.GetLogDirectory(), config.GetLogPath(); dir != "" && p != "" {
		c.logPath = filepath.Join(dir, p)
	}
	r.containers[c.id] = c
	r.gen++
	r.containerOrder = append(r.containerOrder, c)
	r.indexContainer(c)
	sb.containers = append(sb.containers, c)
	r.names[name] = c.id
	r.emitContainerEvent(c, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, now)
	return c.id, nil
}

// StartContainer starts a CREATED container. FAKECRI_STARTUP_DELAY makes
// the call take that long (through Clock.Sleep); the container is RUNNING
// from its end. If its log file cannot be created it ends EXITED with
// reason StartError, like containerd.
func (r *Runtime) StartContainer(ctx context.Context, containerID string) error {
	if err := r.enter(ctx, "StartContainer", callTarget{containerID: containerID}); err != nil {
		return err
	}
	r.mu.Lock()
	now := r.now()
	r.advance(now)
	c, err := r.getContainer(containerID)
	if err != nil {
		r.unlock()
		return err
	}
	if c.state != createdState || c.starting {
		r.unlock()
		return status.Errorf(codes.FailedPrecondition, "container %q is in %s state, want CONTAINER_CREATED", c.id, stateName(c))
	}
	if c.sb.state != readyState {
		r.unlock()
		return status.Errorf(codes.FailedPrecondition, "container %q: pod sandbox %q is not ready", c.id, c.sb.id)
	}
	delay := c.script.startupDelay
	if delay > 0 {
		c.starting = true
		r.unlock()
		r.clock.Sleep(delay)
		r.mu.Lock()
		now = r.now()
		r.advance(now)
		c.starting = false
		if c.removed {
			r.unlock()
			return status.Errorf(codes.NotFound, "container %q not found: removed while starting", c.id)
		}
		if c.sb.state != readyState {
			msg := fmt.Sprintf("pod sandbox %q stopped while container was starting", c.sb.id)
			r.failStart(c, now, msg)
			r.unlock()
			return status.Errorf(codes.Unknown, "failed to start container %q: %s", c.id, msg)
		}
	}
	defer r.unlock()
	if c.logPath != "" {
		if err := r.files.AppendFile(c.logPath, nil); err != nil {
			msg := fmt.Sprintf("failed to create and open log file %q: %v", c.logPath, err)
			r.failStart(c, now, msg)
			return status.Errorf(codes.Unknown, "failed to start container %q: %s", c.id, msg)
		}
	}
	r.start(c, now)
	r.advance(now)
	return nil
}

// stateName names c's state, saying "starting" while StartContainer waits.
func stateName(c *container) string {
	if c.starting {
		return "starting"
	}
	return c.state.String()
}

// noteStopAsked remembers when the runtime was first asked to stop
// container id, before any injected fault can fail or delay the call.
func (r *Runtime) noteStopAsked(id string) {
	r.mu.Lock()
	defer r.unlock()
	if c, ok := r.containers[id]; ok && c.stopAskedAt == 0 {
		c.stopAskedAt = r.now()
		r.gen++
	}
}

// StopContainer stops a running container: SIGTERM, then SIGKILL (exit
// 137) once timeout seconds have passed. A container exits at SIGTERM with
// 143, or after FAKECRI_STOP_DELAY with 0, or ignores it
// (FAKECRI_IGNORE_SIGTERM) and is killed. timeout <= 0 kills at once, like
// containerd. The call blocks until the container has exited, or until ctx
// ends when the Clock is a DeadlineClock (the container is still killed at
// its deadline; a later call with a shorter timeout brings it forward).
// Stopping a container that is not running does nothing.
func (r *Runtime) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	r.noteStopAsked(containerID)
	if err := r.enter(ctx, "StopContainer", callTarget{containerID: containerID}); err != nil {
		return err
	}
	r.mu.Lock()
	now := r.now()
	r.advance(now)
	c, err := r.getContainer(containerID)
	if err != nil {
		r.unlock()
		return err
	}
	if c.state != runningState {
		r.unlock()
		return nil
	}
	if timeout <= 0 {
		r.finish(c, now, exitKilled, reasonError, "")
		r.unlock()
		return nil
	}
	if c.termAt == 0 {
		c.termAt = now
		r.gen++
	}
	grace := int64(math.MaxInt64)
	if timeout < math.MaxInt64/int64(time.Second) {
		grace = timeout * int64(time.Second)
	}
	if kill := addSat(now, grace); c.killAt == 0 || kill < c.killAt {
		c.killAt = kill
	}
	r.plan(c)
	for {
		r.advance(now)
		if c.state != runningState {
			r.unlock()
			return nil
		}
		wait := time.Duration(c.exitAt - now)
		if wait <= 0 { // cannot happen after advance; never spin
			r.finish(c, now, exitKilled, reasonError, "")
			continue
		}
		r.unlock()
		if err := r.sleep(ctx, wait); err != nil {
			return err
		}
		r.mu.Lock()
		now = r.now()
	}
}

// sleep waits d on the clock and reports ctx's error. When the clock can
// make deadline contexts it returns as soon as ctx ends, as a CRI call
// over gRPC does when its caller gives up (the stop itself stays under
// way: its SIGKILL deadline is kept); with a plain Clock it sleeps d.
func (r *Runtime) sleep(ctx context.Context, d time.Duration) error {
	dc, ok := r.clock.(DeadlineClock)
	if !ok || ctx.Done() == nil {
		r.clock.Sleep(d)
		return ctx.Err()
	}
	wctx, cancel := dc.WithDeadline(ctx, r.clock.Now().Add(d))
	defer cancel()
	_ = r.newSignal("fakecri/stop-wait").Wait(wctx)
	return ctx.Err()
}

// RemoveContainer removes a container, killing it first if it is running
// (like containerd). Removing an unknown container succeeds.
func (r *Runtime) RemoveContainer(ctx context.Context, containerID string) error {
	now, err := r.begin(ctx, "RemoveContainer", callTarget{containerID: containerID})
	if err != nil {
		return err
	}
	defer r.unlock()
	c, err := r.getContainer(containerID)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.starting {
		return status.Errorf(codes.FailedPrecondition, "container %q is in starting state, can't be removed", c.id)
	}
	r.removeContainer(c, now)
	return nil
}

// removeContainer kills c if running, drops it and reports DELETED.
func (r *Runtime) removeContainer(c *container, now int64) {
	if c.state == runningState {
		r.finish(c, now, exitKilled, reasonError, "")
	}
	r.dropContainer(c, now)
	r.emitContainerEvent(c, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, now)
}

// ListContainers lists containers in creation order, filtered by ID (or
// unique prefix), pod sandbox ID, state and labels. Under
// SetListStaleness it answers the state as of that long ago.
func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	now, err := r.begin(ctx, "ListContainers", callTarget{sandboxID: filter.GetPodSandboxId(), containerID: filter.GetId()})
	if err != nil {
		return nil, err
	}
	defer r.unlock()
	at, stale := r.listTime(now)
	out := []*runtimeapi.Container{}
	candidates, ok := r.containersAt(filter.GetId(), filter.GetPodSandboxId(), filter.GetLabelSelector(), at, stale)
	if !ok {
		return out, nil
	}
	for _, c := range candidates {
		state, visible := c.stateAt(at, stale)
		if !visible {
			continue
		}
		if fs := filter.GetState(); fs != nil && fs.GetState() != state {
			continue
		}
		if !labelsMatch(c.config.GetLabels(), filter.GetLabelSelector()) {
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id:           c.id,
			PodSandboxId: c.sb.id,
			Metadata:     &runtimeapi.ContainerMetadata{Name: c.config.GetMetadata().GetName(), Attempt: c.config.GetMetadata().GetAttempt()},
			Image:        &runtimeapi.ImageSpec{Image: c.imageSpec.GetImage(), Annotations: maps.Clone(c.imageSpec.GetAnnotations()), UserSpecifiedImage: c.imageSpec.GetUserSpecifiedImage(), RuntimeHandler: c.imageSpec.GetRuntimeHandler()},
			ImageRef:     c.imageID,
			ImageId:      c.imageID,
			State:        state,
			CreatedAt:    c.createdAt,
			Labels:       maps.Clone(c.config.GetLabels()),
			Annotations:  maps.Clone(c.config.GetAnnotations()),
		})
	}
	return out, nil
}

// ContainerStatus returns a container's status; with verbose, an "info"
// JSON with its sandbox, pid and, as containerd's, the whole
// ContainerConfig it was created from ("config": env, mounts, command), so
// a harness can see what the agent asked the runtime for.
func (r *Runtime) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	_, err := r.begin(ctx, "ContainerStatus", callTarget{containerID: containerID})
	if err != nil {
		return nil, err
	}
	defer r.unlock()
	c, err := r.getContainer(containerID)
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: r.containerStatus(c)}
	if verbose {
		pid := 0
		if c.state == runningState {
			pid = int(1000 + c.seq)
		}
		resp.Info = map[string]string{"info": mustJSON(map[string]any{
			"sandboxID": c.sb.id,
			"pid":       pid,
			"name":      c.name,
			"runtime":   r.cfg.RuntimeName,
			"config":    c.config,
		})}
	}
	return resp, nil
}

// containerStatus builds c's status, like containerd: Image is the first
// repo tag and ImageRef the first repo digest when the image has them.
func (r *Runtime) containerStatus(c *container) *runtimeapi.ContainerStatus {
	spec := &runtimeapi.ImageSpec{Image: c.imageSpec.GetImage()}
	if c.imageTag != "" {
		spec = &runtimeapi.ImageSpec{Image: c.imageTag}
	}
	ref := c.imageID
	if c.imageDigest != "" {
		ref = c.imageDigest
	}
	st := &runtimeapi.ContainerStatus{
		Id:          c.id,
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.config.GetMetadata().GetName(), Attempt: c.config.GetMetadata().GetAttempt()},
		State:       c.state,
		CreatedAt:   c.createdAt,
		StartedAt:   c.startedAt,
		FinishedAt:  c.finishedAt,
		ExitCode:    c.exitCode,
		Image:       spec,
		ImageRef:    ref,
		ImageId:     c.imageID,
		Reason:      c.reason,
		Message:     c.message,
		Labels:      maps.Clone(c.config.GetLabels()),
		Annotations: maps.Clone(c.config.GetAnnotations()),
		LogPath:     c.logPath,
	}
	for _, m := range c.config.GetMounts() {
		st.Mounts = append(st.Mounts, proto.Clone(m).(*runtimeapi.Mount))
	}
	if c.resources != nil {
		st.Resources = &runtimeapi.ContainerResources{Linux: proto.Clone(c.resources).(*runtimeapi.LinuxContainerResources)}
	}
	return st
}

// UpdateContainerResources changes a created or running container's
// resources. As containerd does, only the fields the update sets (not
// zero, not empty) change: a cpuset-only update (the CPU manager's) keeps
// the limits. A lower memory limit takes effect at once (the container is
// OOM-killed now if it already uses more).
func (r *Runtime) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error {
	now, err := r.begin(ctx, "UpdateContainerResources", callTarget{containerID: containerID})
	if err != nil {
		return err
	}
	defer r.unlock()
	c, err := r.getContainer(containerID)
	if err != nil {
		return err
	}
	if c.state != createdState && c.state != runningState {
		return status.Errorf(codes.FailedPrecondition, "container %q is in %s state, cannot update resources", c.id, c.state)
	}
	if lr := resources.GetLinux(); lr != nil {
		c.resources = mergeResources(c.resources, lr)
		c.limitSince = now
		r.gen++
	}
	r.plan(c)
	r.advance(now)
	return nil
}

// ReopenContainerLog reopens (creates again) a running container's log
// file, after the kubelet has rotated it.
func (r *Runtime) ReopenContainerLog(ctx context.Context, containerID string) error {
	_, err := r.begin(ctx, "ReopenContainerLog", callTarget{containerID: containerID})
	if err != nil {
		return err
	}
	defer r.unlock()
	c, err := r.getContainer(containerID)
	if err != nil {
		return err
	}
	if c.state != runningState {
		return status.Errorf(codes.FailedPrecondition, "container %q is not running", c.id)
	}
	if c.logPath == "" {
		return nil
	}
	if err := r.files.AppendFile(c.logPath, nil); err != nil {
		return status.Errorf(codes.Unknown, "failed to reopen log of container %q: %v", c.id, err)
	}
	c.logBytes = 0
	return nil
}

// mergeResources is cur with the fields update sets replaced.
func mergeResources(cur, update *runtimeapi.LinuxContainerResources) *runtimeapi.LinuxContainerResources {
	out := &runtimeapi.LinuxContainerResources{}
	if cur != nil {
		out = proto.Clone(cur).(*runtimeapi.LinuxContainerResources)
	}
	hugepages := out.HugepageLimits
	proto.Merge(out, update)
	out.HugepageLimits = hugepages
	if len(update.HugepageLimits) > 0 {
		out.HugepageLimits = proto.Clone(update).(*runtimeapi.LinuxContainerResources).HugepageLimits
	}
	return out
}
