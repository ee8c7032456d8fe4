package fakecri

import (
	"context"
	"maps"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// snapshotterMount is where containerd keeps images and writable layers:
// the imagefs mount point.
const snapshotterMount = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs"

// ContainerStats returns a container's stats now. Only running containers
// have CPU and memory, like containerd.
func (r *Runtime) ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error) {
	now, err := r.begin(ctx, "ContainerStats", callTarget{containerID: containerID})
	if err != nil {
		return nil, err
	}
	defer r.unlock()
	c, err := r.getContainer(containerID)
	if err != nil {
		return nil, err
	}
	return r.withoutNanoCores(containerStatsAt(c, now, c.state, r.cfg.ImagefsMountpoint)), nil
}

// ListContainerStats lists container stats in creation order, filtered by
// ID, pod sandbox ID and labels. Under SetListStaleness it answers the
// state and usage as of that long ago.
func (r *Runtime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	now, err := r.begin(ctx, "ListContainerStats", callTarget{sandboxID: filter.GetPodSandboxId(), containerID: filter.GetId()})
	if err != nil {
		return nil, err
	}
	defer r.unlock()
	at, stale := r.listTime(now)
	out := []*runtimeapi.ContainerStats{}
	candidates, ok := r.containersAt(filter.GetId(), filter.GetPodSandboxId(), filter.GetLabelSelector(), at, stale)
	if !ok {
		return out, nil
	}
	for _, c := range candidates {
		state, visible := c.stateAt(at, stale)
		if !visible || !labelsMatch(c.config.GetLabels(), filter.GetLabelSelector()) {
			continue
		}
		out = append(out, r.withoutNanoCores(containerStatsAt(c, at, state, r.cfg.ImagefsMountpoint)))
	}
	return out, nil
}

// PodSandboxStats returns a READY sandbox's stats: the sums of its
// containers' stats.
func (r *Runtime) PodSandboxStats(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStats, error) {
	if r.cfg.NoSandboxStats {
		return nil, r.unimplementedCall(ctx, "PodSandboxStats")
	}
	now, err := r.begin(ctx, "PodSandboxStats", callTarget{sandboxID: podSandboxID})
	if err != nil {
		return nil, err
	}
	defer r.unlock()
	sb, err := r.getSandbox(podSandboxID)
	if err != nil {
		return nil, err
	}
	if sb.state != readyState {
		return nil, status.Errorf(codes.FailedPrecondition, "pod sandbox %q is not ready, it has no stats", sb.id)
	}
	return sandboxStatsAt(sb, now, r.cfg.ImagefsMountpoint), nil
}

// ListPodSandboxStats lists the stats of READY sandboxes in creation
// order, filtered by ID and labels.
func (r *Runtime) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	if r.cfg.NoSandboxStats {
		return nil, r.unimplementedCall(ctx, "ListPodSandboxStats")
	}
	now, err := r.begin(ctx, "ListPodSandboxStats", callTarget{sandboxID: filter.GetId()})
	if err != nil {
		return nil, err
	}
	defer r.unlock()
	candidates := r.sandboxOrder
	if id := filter.GetId(); id != "" {
		sb, err := r.getSandbox(id)
		if err != nil {
			return []*runtimeapi.PodSandboxStats{}, nil
		}
		candidates = []*sandbox{sb}
	}
	out := []*runtimeapi.PodSandboxStats{}
	for _, sb := range candidates {
		if sb.removed || sb.state != readyState || !labelsMatch(sb.config.GetLabels(), filter.GetLabelSelector()) {
			continue
		}
		out = append(out, sandboxStatsAt(sb, now, r.cfg.ImagefsMountpoint))
	}
	return out, nil
}

// withoutNanoCores drops usage_nano_cores from cs under NoNanoCores.
func (r *Runtime) withoutNanoCores(cs *runtimeapi.ContainerStats) *runtimeapi.ContainerStats {
	if r.cfg.NoNanoCores && cs.Cpu != nil {
		cs.Cpu.UsageNanoCores = nil
	}
	return cs
}

// u64 wraps a value for the stats messages.
func u64(v uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: v} }

// containerStatsAt builds c's stats at t, when its state was state; its
// writable layer is on the imagefs at mount.
func containerStatsAt(c *container, t int64, state runtimeapi.ContainerState, mount string) *runtimeapi.ContainerStats {
	cs := &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{
			Id:          c.id,
			Metadata:    &runtimeapi.ContainerMetadata{Name: c.config.GetMetadata().GetName(), Attempt: c.config.GetMetadata().GetAttempt()},
			Labels:      maps.Clone(c.config.GetLabels()),
			Annotations: maps.Clone(c.config.GetAnnotations()),
		},
		WritableLayer: &runtimeapi.FilesystemUsage{
			Timestamp:  t,
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: mount},
			UsedBytes:  u64(c.script.disk),
			InodesUsed: u64(1),
		},
	}
	if state != runningState {
		return cs
	}
	ws := c.memoryAt(t)
	cs.Cpu = &runtimeapi.CpuUsage{
		Timestamp:            t,
		UsageCoreNanoSeconds: u64(c.cpuAt(t)),
		UsageNanoCores:       u64(c.script.cpuMilli * 1_000_000),
	}
	cs.Memory = &runtimeapi.MemoryUsage{
		Timestamp:       t,
		WorkingSetBytes: u64(ws),
		UsageBytes:      u64(ws),
		RssBytes:        u64(ws),
		PageFaults:      u64(0),
		MajorPageFaults: u64(0),
	}
	if limit := c.memoryLimit(); limit > 0 {
		cs.Memory.AvailableBytes = u64(subSatU(limit, ws))
	}
	return cs
}

// sandboxStatsAt builds sb's stats at t from its containers' (writable
// layers on the imagefs at mount).
func sandboxStatsAt(sb *sandbox, t int64, mount string) *runtimeapi.PodSandboxStats {
	var cpuNS, nanoCores, ws, pids uint64
	linux := &runtimeapi.LinuxPodSandboxStats{}
	for _, c := range sb.containers {
		cs := containerStatsAt(c, t, c.state, mount)
		linux.Containers = append(linux.Containers, cs)
		if c.state == runningState {
			cpuNS = addSatU(cpuNS, cs.Cpu.UsageCoreNanoSeconds.Value)
			nanoCores = addSatU(nanoCores, cs.Cpu.UsageNanoCores.Value)
			ws = addSatU(ws, cs.Memory.WorkingSetBytes.Value)
			pids = addSatU(pids, c.script.pids)
		}
	}
	linux.Cpu = &runtimeapi.CpuUsage{Timestamp: t, UsageCoreNanoSeconds: u64(cpuNS), UsageNanoCores: u64(nanoCores)}
	linux.Memory = &runtimeapi.MemoryUsage{Timestamp: t, WorkingSetBytes: u64(ws), UsageBytes: u64(ws), RssBytes: u64(ws), PageFaults: u64(0), MajorPageFaults: u64(0)}
	linux.Process = &runtimeapi.ProcessUsage{Timestamp: t, ProcessCount: u64(pids)}
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id:          sb.id,
			Metadata:    proto.Clone(sb.config.GetMetadata()).(*runtimeapi.PodSandboxMetadata),
			Labels:      maps.Clone(sb.config.GetLabels()),
			Annotations: maps.Clone(sb.config.GetAnnotations()),
		},
		Linux: linux,
	}
}
