package metrics

import (
	"context"
	"time"

	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// The operation_type label of the kubelet_runtime_operations_* metrics for
// each CRI call, as the kubelet names them.
const (
	OpVersion                   = "version"
	OpStatus                    = "status"
	OpRuntimeConfig             = "runtime_config"
	OpUpdateRuntimeConfig       = "update_runtime_config"
	OpRunPodSandbox             = "run_podsandbox"
	OpStopPodSandbox            = "stop_podsandbox"
	OpRemovePodSandbox          = "remove_podsandbox"
	OpPodSandboxStatus          = "podsandbox_status"
	OpListPodSandbox            = "list_podsandbox"
	OpPortForward               = "port_forward"
	OpUpdatePodSandboxResources = "update_podsandbox_resources"
	OpCheckpointPod             = "checkpoint_pod"
	OpRestorePod                = "restore_pod"
	OpCreateContainer           = "create_container"
	OpStartContainer            = "start_container"
	OpStopContainer             = "stop_container"
	OpRemoveContainer           = "remove_container"
	OpListContainers            = "list_containers"
	OpContainerStatus           = "container_status"
	OpUpdateContainer           = "update_container"
	OpExecSync                  = "exec_sync"
	OpExec                      = "exec"
	OpAttach                    = "attach"
	OpReopenContainerLog        = "reopen_container_log"
	OpCheckpointContainer       = "checkpoint_container"
	OpContainerStats            = "container_stats"
	OpListContainerStats        = "list_container_stats"
	OpPodSandboxStats           = "podsandbox_stats"
	OpListPodSandboxStats       = "list_podsandbox_stats"
	OpListMetricDescriptors     = "list_metric_descriptors"
	OpListPodSandboxMetrics     = "list_podsandbox_metrics"
	OpListImages                = "list_images"
	OpImageStatus               = "image_status"
	OpPullImage                 = "pull_image"
	OpRemoveImage               = "remove_image"
	OpImageFsInfo               = "image_fs_info"
)

// timer measures CRI calls with the injected clock.
type timer struct {
	m     *Metrics
	clock deps.Clock
}

// done records a call of op that began at start and ended with err.
func (t timer) done(op string, start time.Time, err error) {
	t.m.observeRuntime(op, t.clock.Since(start), err)
}

// InstrumentRuntime returns rs with every call counted, timed on clock and
// its failures counted in m's kubelet_runtime_operations_* metrics, under
// the kubelet's operation names. GetContainerEvents (a stream whose call
// lasts as long as the subscription) and Close pass through unmeasured. A
// nil m returns rs itself.
func InstrumentRuntime(rs cri.RuntimeService, m *Metrics, clock deps.Clock) cri.RuntimeService {
	if m == nil {
		return rs
	}
	return &instrumentedRuntime{RuntimeService: rs, t: timer{m: m, clock: clock}}
}

// InstrumentImages is InstrumentRuntime for the image service (Close
// passes through).
func InstrumentImages(is cri.ImageManagerService, m *Metrics, clock deps.Clock) cri.ImageManagerService {
	if m == nil {
		return is
	}
	return &instrumentedImages{ImageManagerService: is, t: timer{m: m, clock: clock}}
}

// instrumentedRuntime embeds the runtime for the methods it does not
// measure (GetContainerEvents, whose channel parameter agent code may not
// spell, and Close).
type instrumentedRuntime struct {
	cri.RuntimeService
	t timer
}

// Version implements cri.RuntimeService.
func (r *instrumentedRuntime) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.Version(ctx, apiVersion)
	r.t.done(OpVersion, start, err)
	return out, err
}

// Status implements cri.RuntimeService.
func (r *instrumentedRuntime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.Status(ctx, verbose)
	r.t.done(OpStatus, start, err)
	return out, err
}

// RuntimeConfig implements cri.RuntimeService.
func (r *instrumentedRuntime) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.RuntimeConfig(ctx)
	r.t.done(OpRuntimeConfig, start, err)
	return out, err
}

// UpdateRuntimeConfig implements cri.RuntimeService.
func (r *instrumentedRuntime) UpdateRuntimeConfig(ctx context.Context, cfg *runtimeapi.RuntimeConfig) error {
	start := r.t.clock.Now()
	err := r.RuntimeService.UpdateRuntimeConfig(ctx, cfg)
	r.t.done(OpUpdateRuntimeConfig, start, err)
	return err
}

// RunPodSandbox implements cri.RuntimeService.
func (r *instrumentedRuntime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.RunPodSandbox(ctx, config, runtimeHandler)
	r.t.done(OpRunPodSandbox, start, err)
	return out, err
}

// StopPodSandbox implements cri.RuntimeService.
func (r *instrumentedRuntime) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	start := r.t.clock.Now()
	err := r.RuntimeService.StopPodSandbox(ctx, podSandboxID)
	r.t.done(OpStopPodSandbox, start, err)
	return err
}

// RemovePodSandbox implements cri.RuntimeService.
func (r *instrumentedRuntime) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	start := r.t.clock.Now()
	err := r.RuntimeService.RemovePodSandbox(ctx, podSandboxID)
	r.t.done(OpRemovePodSandbox, start, err)
	return err
}

// PodSandboxStatus implements cri.RuntimeService.
func (r *instrumentedRuntime) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.PodSandboxStatus(ctx, podSandboxID, verbose)
	r.t.done(OpPodSandboxStatus, start, err)
	return out, err
}

// ListPodSandbox implements cri.RuntimeService.
func (r *instrumentedRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.ListPodSandbox(ctx, filter)
	r.t.done(OpListPodSandbox, start, err)
	return out, err
}

// PortForward implements cri.RuntimeService.
func (r *instrumentedRuntime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.PortForward(ctx, req)
	r.t.done(OpPortForward, start, err)
	return out, err
}

// UpdatePodSandboxResources implements cri.RuntimeService.
func (r *instrumentedRuntime) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.UpdatePodSandboxResources(ctx, req)
	r.t.done(OpUpdatePodSandboxResources, start, err)
	return out, err
}

// CheckpointPod implements cri.RuntimeService.
func (r *instrumentedRuntime) CheckpointPod(ctx context.Context, options *runtimeapi.CheckpointPodRequest) error {
	start := r.t.clock.Now()
	err := r.RuntimeService.CheckpointPod(ctx, options)
	r.t.done(OpCheckpointPod, start, err)
	return err
}

// RestorePod implements cri.RuntimeService.
func (r *instrumentedRuntime) RestorePod(ctx context.Context, options *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.RestorePod(ctx, options)
	r.t.done(OpRestorePod, start, err)
	return out, err
}

// CreateContainer implements cri.RuntimeService.
func (r *instrumentedRuntime) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
	r.t.done(OpCreateContainer, start, err)
	return out, err
}

// StartContainer implements cri.RuntimeService.
func (r *instrumentedRuntime) StartContainer(ctx context.Context, containerID string) error {
	start := r.t.clock.Now()
	err := r.RuntimeService.StartContainer(ctx, containerID)
	r.t.done(OpStartContainer, start, err)
	return err
}

// StopContainer implements cri.RuntimeService.
func (r *instrumentedRuntime) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	start := r.t.clock.Now()
	err := r.RuntimeService.StopContainer(ctx, containerID, timeout)
	r.t.done(OpStopContainer, start, err)
	return err
}

// RemoveContainer implements cri.RuntimeService.
func (r *instrumentedRuntime) RemoveContainer(ctx context.Context, containerID string) error {
	start := r.t.clock.Now()
	err := r.RuntimeService.RemoveContainer(ctx, containerID)
	r.t.done(OpRemoveContainer, start, err)
	return err
}

// ListContainers implements cri.RuntimeService.
func (r *instrumentedRuntime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.ListContainers(ctx, filter)
	r.t.done(OpListContainers, start, err)
	return out, err
}

// ContainerStatus implements cri.RuntimeService.
func (r *instrumentedRuntime) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.ContainerStatus(ctx, containerID, verbose)
	r.t.done(OpContainerStatus, start, err)
	return out, err
}

// UpdateContainerResources implements cri.RuntimeService.
func (r *instrumentedRuntime) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error {
	start := r.t.clock.Now()
	err := r.RuntimeService.UpdateContainerResources(ctx, containerID, resources)
	r.t.done(OpUpdateContainer, start, err)
	return err
}

// ExecSync implements cri.RuntimeService.
func (r *instrumentedRuntime) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	start := r.t.clock.Now()
	stdout, stderr, err := r.RuntimeService.ExecSync(ctx, containerID, cmd, timeout)
	r.t.done(OpExecSync, start, err)
	return stdout, stderr, err
}

// Exec implements cri.RuntimeService.
func (r *instrumentedRuntime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.Exec(ctx, req)
	r.t.done(OpExec, start, err)
	return out, err
}

// Attach implements cri.RuntimeService.
func (r *instrumentedRuntime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.Attach(ctx, req)
	r.t.done(OpAttach, start, err)
	return out, err
}

// ReopenContainerLog implements cri.RuntimeService.
func (r *instrumentedRuntime) ReopenContainerLog(ctx context.Context, containerID string) error {
	start := r.t.clock.Now()
	err := r.RuntimeService.ReopenContainerLog(ctx, containerID)
	r.t.done(OpReopenContainerLog, start, err)
	return err
}

// CheckpointContainer implements cri.RuntimeService.
func (r *instrumentedRuntime) CheckpointContainer(ctx context.Context, options *runtimeapi.CheckpointContainerRequest) error {
	start := r.t.clock.Now()
	err := r.RuntimeService.CheckpointContainer(ctx, options)
	r.t.done(OpCheckpointContainer, start, err)
	return err
}

// ContainerStats implements cri.RuntimeService.
func (r *instrumentedRuntime) ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.ContainerStats(ctx, containerID)
	r.t.done(OpContainerStats, start, err)
	return out, err
}

// ListContainerStats implements cri.RuntimeService.
func (r *instrumentedRuntime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.ListContainerStats(ctx, filter)
	r.t.done(OpListContainerStats, start, err)
	return out, err
}

// PodSandboxStats implements cri.RuntimeService.
func (r *instrumentedRuntime) PodSandboxStats(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStats, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.PodSandboxStats(ctx, podSandboxID)
	r.t.done(OpPodSandboxStats, start, err)
	return out, err
}

// ListPodSandboxStats implements cri.RuntimeService.
func (r *instrumentedRuntime) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.ListPodSandboxStats(ctx, filter)
	r.t.done(OpListPodSandboxStats, start, err)
	return out, err
}

// ListMetricDescriptors implements cri.RuntimeService.
func (r *instrumentedRuntime) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.ListMetricDescriptors(ctx)
	r.t.done(OpListMetricDescriptors, start, err)
	return out, err
}

// ListPodSandboxMetrics implements cri.RuntimeService.
func (r *instrumentedRuntime) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	start := r.t.clock.Now()
	out, err := r.RuntimeService.ListPodSandboxMetrics(ctx)
	r.t.done(OpListPodSandboxMetrics, start, err)
	return out, err
}

// instrumentedImages embeds the image service for Close.
type instrumentedImages struct {
	cri.ImageManagerService
	t timer
}

// ListImages implements cri.ImageManagerService.
func (s *instrumentedImages) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	start := s.t.clock.Now()
	out, err := s.ImageManagerService.ListImages(ctx, filter)
	s.t.done(OpListImages, start, err)
	return out, err
}

// ImageStatus implements cri.ImageManagerService.
func (s *instrumentedImages) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	start := s.t.clock.Now()
	out, err := s.ImageManagerService.ImageStatus(ctx, image, verbose)
	s.t.done(OpImageStatus, start, err)
	return out, err
}

// PullImage implements cri.ImageManagerService.
func (s *instrumentedImages) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	start := s.t.clock.Now()
	out, err := s.ImageManagerService.PullImage(ctx, image, auth, podSandboxConfig)
	s.t.done(OpPullImage, start, err)
	return out, err
}

// RemoveImage implements cri.ImageManagerService.
func (s *instrumentedImages) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	start := s.t.clock.Now()
	err := s.ImageManagerService.RemoveImage(ctx, image)
	s.t.done(OpRemoveImage, start, err)
	return err
}

// ImageFsInfo implements cri.ImageManagerService.
func (s *instrumentedImages) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	start := s.t.clock.Now()
	out, err := s.ImageManagerService.ImageFsInfo(ctx)
	s.t.done(OpImageFsInfo, start, err)
	return out, err
}
