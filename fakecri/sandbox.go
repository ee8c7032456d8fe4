package fakecri

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RunPodSandbox creates a sandbox and makes it READY, with an IP from the
// pod CIDR unless it is on the host network.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	if err := r.enter(ctx, "RunPodSandbox", callTarget{podUID: podUIDOf(config)}); err != nil {
		return "", err
	}
	md := config.GetMetadata()
	if md == nil {
		return "", status.Error(codes.InvalidArgument, "pod sandbox config must include metadata")
	}
	if md.GetName() == "" {
		return "", status.Error(codes.InvalidArgument, "pod sandbox metadata must include a name")
	}
	if runtimeHandler != "" && !slices.Contains(r.cfg.RuntimeHandlers, runtimeHandler) {
		return "", status.Errorf(codes.InvalidArgument, "no runtime for %q is configured", runtimeHandler)
	}
	if err := r.checkUserNamespace(config, runtimeHandler); err != nil {
		return "", err
	}
	name := strings.Join([]string{md.GetName(), md.GetNamespace(), md.GetUid(), fmt.Sprint(md.GetAttempt())}, "_")
	hostNet := config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE

	r.mu.Lock()
	defer r.unlock()
	now := r.now()
	r.advance(now)
	if other, ok := r.names[name]; ok {
		return "", status.Errorf(codes.AlreadyExists, "failed to reserve sandbox name %q: name is reserved for %q", name, other)
	}
	if r.faults.networkNotReady && !hostNet {
		return "", status.Errorf(codes.Unknown, "failed to setup network for sandbox %q: cni plugin not initialized", name)
	}
	r.objSeq++
	sb := &sandbox{
		id:        r.newID(),
		seq:       r.objSeq,
		name:      name,
		config:    proto.Clone(config).(*runtimeapi.PodSandboxConfig),
		handler:   runtimeHandler,
		uid:       podUIDOf(config),
		state:     readyState,
		createdAt: now,
	}
	if !hostNet && !r.faults.takeNoIP() {
		ip, ok := r.nextIP()
		if !ok {
			return "", status.Errorf(codes.Unknown, "failed to setup network for sandbox %q: no IP addresses available in range set: %s", name, r.loopback)
		}
		sb.ip = ip
	}
	sb.addr, sb.ports = sb.ip, declaredPorts(sb)
	if hostNet && r.cfg.NodeAddress.IsValid() {
		sb.addr = r.cfg.NodeAddress.String()
	}
	r.sandboxes[sb.id] = sb
	r.gen++
	r.indexAddr(sb)
	r.sandboxOrder = append(r.sandboxOrder, sb)
	r.indexSandbox(sb)
	r.names[name] = sb.id
	r.emitSandboxEvent(sb, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, now)
	r.emitSandboxEvent(sb, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, now)
	return sb.id, nil
}

// StopPodSandbox kills the sandbox's running containers (exit 137, like
// containerd's forced stop) and makes it NOTREADY. It is idempotent.
func (r *Runtime) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	now, err := r.begin(ctx, "StopPodSandbox", callTarget{sandboxID: podSandboxID})
	if err != nil {
		return err
	}
	defer r.unlock()
	sb, err := r.getSandbox(podSandboxID)
	if err != nil {
		return err
	}
	r.stopSandbox(sb, now)
	return nil
}

// stopSandbox kills sb's containers and makes it NOTREADY.
func (r *Runtime) stopSandbox(sb *sandbox, now int64) {
	for _, c := range sb.containers {
		if c.state == runningState {
			r.finish(c, now, exitKilled, reasonError, "")
		}
	}
	if sb.state == readyState {
		sb.state, sb.stoppedAt = notReady, now
		r.gen++
		r.emitSandboxEvent(sb, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, now)
	}
}

// RemovePodSandbox removes a sandbox and all its containers, stopping it
// first if it is READY (as containerd does). Removing an unknown sandbox
// succeeds.
func (r *Runtime) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	now, err := r.begin(ctx, "RemovePodSandbox", callTarget{sandboxID: podSandboxID})
	if err != nil {
		return err
	}
	defer r.unlock()
	sb, err := r.getSandbox(podSandboxID)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	r.stopSandbox(sb, now)
	for len(sb.containers) > 0 {
		r.removeContainer(sb.containers[0], now)
	}
	r.dropSandbox(sb, now)
	r.emitSandboxEvent(sb, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, now)
	return nil
}

// PodSandboxStatus returns a sandbox's status; with verbose, an "info" JSON.
func (r *Runtime) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	now, err := r.begin(ctx, "PodSandboxStatus", callTarget{sandboxID: podSandboxID})
	if err != nil {
		return nil, err
	}
	defer r.unlock()
	sb, err := r.getSandbox(podSandboxID)
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: r.sandboxStatus(sb)}
	if !r.cfg.NoEvents {
		resp.ContainersStatuses = r.containerStatuses(sb)
		resp.Timestamp = now
	}
	if verbose {
		resp.Info = map[string]string{"info": mustJSON(map[string]any{
			"sandboxID":      sb.id,
			"name":           sb.name,
			"runtimeHandler": sb.handler,
			"containers":     len(sb.containers),
			"runtime":        r.cfg.RuntimeName,
			"config":         sb.config,
		})}
	}
	return resp, nil
}

// sandboxStatus builds sb's status.
func (r *Runtime) sandboxStatus(sb *sandbox) *runtimeapi.PodSandboxStatus {
	st := &runtimeapi.PodSandboxStatus{
		Id:             sb.id,
		Metadata:       proto.Clone(sb.config.GetMetadata()).(*runtimeapi.PodSandboxMetadata),
		State:          sb.state,
		CreatedAt:      sb.createdAt,
		Network:        &runtimeapi.PodSandboxNetworkStatus{Ip: sb.ip},
		Labels:         maps.Clone(sb.config.GetLabels()),
		Annotations:    maps.Clone(sb.config.GetAnnotations()),
		RuntimeHandler: sb.handler,
	}
	if ns := sb.config.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns != nil {
		st.Linux = &runtimeapi.LinuxPodSandboxStatus{
			Namespaces: &runtimeapi.Namespace{Options: proto.Clone(ns).(*runtimeapi.NamespaceOption)},
		}
	}
	return st
}

// ListPodSandbox lists sandboxes in creation order, filtered by ID (or
// unique prefix), state and labels. Under SetListStaleness it answers the
// state as of that long ago.
func (r *Runtime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	now, err := r.begin(ctx, "ListPodSandbox", callTarget{sandboxID: filter.GetId()})
	if err != nil {
		return nil, err
	}
	defer r.unlock()
	at, stale := r.listTime(now)
	var candidates []*sandbox
	if id := filter.GetId(); id != "" {
		sb := r.findSandboxAt(id, at, stale)
		if sb == nil {
			return []*runtimeapi.PodSandbox{}, nil
		}
		candidates = []*sandbox{sb}
	} else if e, ok := r.indexedPod(filter.GetLabelSelector()); ok && !stale {
		candidates = e.sandboxes
	} else {
		candidates = r.sandboxOrder
	}
	out := []*runtimeapi.PodSandbox{}
	for _, sb := range candidates {
		state, visible := sb.stateAt(at, stale)
		if !visible {
			continue
		}
		if fs := filter.GetState(); fs != nil && fs.GetState() != state {
			continue
		}
		if !labelsMatch(sb.config.GetLabels(), filter.GetLabelSelector()) {
			continue
		}
		out = append(out, sb.toCRI(state))
	}
	return out, nil
}

// labelsMatch reports whether labels has every key/value of selector.
func labelsMatch(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// toCRI is the sandbox as ListPodSandbox reports it in state.
func (sb *sandbox) toCRI(state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{
		Id:             sb.id,
		Metadata:       proto.Clone(sb.config.GetMetadata()).(*runtimeapi.PodSandboxMetadata),
		State:          state,
		CreatedAt:      sb.createdAt,
		Labels:         maps.Clone(sb.config.GetLabels()),
		Annotations:    maps.Clone(sb.config.GetAnnotations()),
		RuntimeHandler: sb.handler,
	}
}

// checkUserNamespace refuses a sandbox in a user namespace of its own when
// the runtime has no support for them, or whose mappings are not one
// range for users and the same for groups, starting at container ID 0.
func (r *Runtime) checkUserNamespace(config *runtimeapi.PodSandboxConfig, handler string) error {
	ns := config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	if ns == nil || ns.GetMode() != runtimeapi.NamespaceMode_POD {
		return nil // none asked (POD is the zero mode: nil is not POD)
	}
	if !r.cfg.UserNamespaces {
		return status.Errorf(codes.InvalidArgument, "runtime handler %q does not support user namespaces", handler)
	}
	uids, gids := ns.GetUids(), ns.GetGids()
	if len(uids) != 1 || len(gids) != 1 || uids[0].GetContainerId() != 0 || uids[0].GetLength() == 0 ||
		!proto.Equal(uids[0], gids[0]) {
		return status.Errorf(codes.InvalidArgument, "user namespace: want one mapping from container ID 0, the same for users and groups; got uids %v gids %v", uids, gids)
	}
	return nil
}
