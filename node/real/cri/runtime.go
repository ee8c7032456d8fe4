package cri

import (
	"context"
	"fmt"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version returns the runtime's name, version and CRI API version.
func (c *Client) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.Version(ctx, &runtimeapi.VersionRequest{Version: apiVersion})
	if err != nil {
		return nil, wrap(err, "Version", "")
	}
	return resp, nil
}

// RunPodSandbox creates and starts a pod sandbox and returns its ID.
func (c *Client) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler})
	if err != nil {
		return "", wrap(err, "RunPodSandbox", sandboxName(config))
	}
	if resp.GetPodSandboxId() == "" {
		return "", fmt.Errorf("CRI RunPodSandbox %q: the runtime returned no sandbox ID", sandboxName(config))
	}
	return resp.GetPodSandboxId(), nil
}

// sandboxName is "namespace/name" of a sandbox config, for errors.
func sandboxName(config *runtimeapi.PodSandboxConfig) string {
	md := config.GetMetadata()
	return md.GetNamespace() + "/" + md.GetName()
}

// StopPodSandbox stops a sandbox and kills its containers.
func (c *Client) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	ctx, cancel := c.call(ctx)
	defer cancel()
	if _, err := c.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: podSandboxID}); err != nil {
		return wrap(err, "StopPodSandbox", podSandboxID)
	}
	return nil
}

// RemovePodSandbox removes a sandbox and its containers.
func (c *Client) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	ctx, cancel := c.call(ctx)
	defer cancel()
	if _, err := c.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podSandboxID}); err != nil {
		return wrap(err, "RemovePodSandbox", podSandboxID)
	}
	return nil
}

// PodSandboxStatus returns a sandbox's status. A response without a
// status is an error.
func (c *Client) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podSandboxID, Verbose: verbose})
	if err != nil {
		return nil, wrap(err, "PodSandboxStatus", podSandboxID)
	}
	if resp.GetStatus() == nil {
		return nil, fmt.Errorf("CRI PodSandboxStatus %q: the runtime returned no status", podSandboxID)
	}
	return resp, nil
}

// ListPodSandbox lists the sandboxes that match filter.
func (c *Client) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, wrap(err, "ListPodSandbox", "")
	}
	return resp.GetItems(), nil
}

// PortForward returns the streaming URL of a port forward.
func (c *Client) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.PortForward(ctx, req)
	if err != nil {
		return nil, wrap(err, "PortForward", req.GetPodSandboxId())
	}
	return resp, nil
}

// UpdatePodSandboxResources updates a sandbox's pod-level resources.
func (c *Client) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.UpdatePodSandboxResources(ctx, req)
	if err != nil {
		return nil, wrap(err, "UpdatePodSandboxResources", req.GetPodSandboxId())
	}
	return resp, nil
}

// CheckpointPod checkpoints a sandbox.
func (c *Client) CheckpointPod(ctx context.Context, req *runtimeapi.CheckpointPodRequest) error {
	ctx, cancel := c.call(ctx)
	defer cancel()
	if _, err := c.runtime.CheckpointPod(ctx, req); err != nil {
		return wrap(err, "CheckpointPod", req.GetPodSandboxId())
	}
	return nil
}

// RestorePod restores a sandbox from a checkpoint.
func (c *Client) RestorePod(ctx context.Context, req *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.RestorePod(ctx, req)
	if err != nil {
		return nil, wrap(err, "RestorePod", req.GetCheckpointPath())
	}
	return resp, nil
}

// CreateContainer creates a container in a sandbox and returns its ID.
func (c *Client) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: podSandboxID, Config: config, SandboxConfig: sandboxConfig,
	})
	what := config.GetMetadata().GetName() + " in sandbox " + podSandboxID
	if err != nil {
		return "", wrap(err, "CreateContainer", what)
	}
	if resp.GetContainerId() == "" {
		return "", fmt.Errorf("CRI CreateContainer %q: the runtime returned no container ID", what)
	}
	return resp.GetContainerId(), nil
}

// StartContainer starts a created container.
func (c *Client) StartContainer(ctx context.Context, containerID string) error {
	ctx, cancel := c.call(ctx)
	defer cancel()
	if _, err := c.runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: containerID}); err != nil {
		return wrap(err, "StartContainer", containerID)
	}
	return nil
}

// StopContainer stops a container, killing it after timeout seconds. The
// call may take that long: it is bounded by the request timeout plus
// timeout.
func (c *Client) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	ctx, cancel := c.callPlus(ctx, time.Duration(timeout)*time.Second)
	defer cancel()
	if _, err := c.runtime.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: containerID, Timeout: timeout}); err != nil {
		return wrap(err, "StopContainer", containerID)
	}
	return nil
}

// callPlus bounds ctx by the request timeout plus extra (the time the
// runtime is allowed to take on purpose).
func (c *Client) callPlus(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	if c.opts.RequestTimeout < 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.opts.RequestTimeout+max(extra, 0))
}

// RemoveContainer removes a container.
func (c *Client) RemoveContainer(ctx context.Context, containerID string) error {
	ctx, cancel := c.call(ctx)
	defer cancel()
	if _, err := c.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: containerID}); err != nil {
		return wrap(err, "RemoveContainer", containerID)
	}
	return nil
}

// ListContainers lists the containers that match filter.
func (c *Client) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, wrap(err, "ListContainers", "")
	}
	return resp.GetContainers(), nil
}

// ContainerStatus returns a container's status. A response without a
// status is an error.
func (c *Client) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: containerID, Verbose: verbose})
	if err != nil {
		return nil, wrap(err, "ContainerStatus", containerID)
	}
	if resp.GetStatus() == nil {
		return nil, fmt.Errorf("CRI ContainerStatus %q: the runtime returned no status", containerID)
	}
	return resp, nil
}

// UpdateContainerResources updates a container's resources.
func (c *Client) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error {
	ctx, cancel := c.call(ctx)
	defer cancel()
	req := &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: containerID,
		Linux:       resources.GetLinux(),
		Windows:     resources.GetWindows(),
	}
	if _, err := c.runtime.UpdateContainerResources(ctx, req); err != nil {
		return wrap(err, "UpdateContainerResources", containerID)
	}
	return nil
}

// ExitError is the error of an ExecSync whose command ran and exited
// non-zero. It has the method set of k8s.io/utils/exec.ExitError, so
// callers can test for interface{ ExitStatus() int }.
type ExitError struct {
	ContainerID string
	Cmd         []string
	Code        int
	Stderr      []byte
}

// Error names the command, the exit code and its stderr in the words of
// the kubelet's CRI client (cri-client's ExecSync): users see it in a
// failed hook's PostStartHookError message and FailedPreStopHook event.
// The container is named by the caller's message, not here.
func (e *ExitError) Error() string {
	return fmt.Sprintf("command '%s' exited with %d: %s", strings.Join(e.Cmd, " "), e.Code, e.Stderr)
}

// String is Error.
func (e *ExitError) String() string { return e.Error() }

// Exited is true: the command ran and exited.
func (e *ExitError) Exited() bool { return true }

// ExitStatus is the command's exit code.
func (e *ExitError) ExitStatus() int { return e.Code }

// ExecSync runs cmd in a container and returns its output. A non-zero exit
// is an *ExitError (with the output still returned). A positive timeout is
// passed to the runtime and the call is bounded by it plus the request
// timeout; with timeout 0 only ctx bounds it.
func (c *Client) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error) {
	var cancel context.CancelFunc
	if timeout > 0 {
		ctx, cancel = c.callPlus(ctx, timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	resp, err := c.runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{
		ContainerId: containerID,
		Cmd:         cmd,
		Timeout:     int64(timeout.Seconds()),
	})
	if err != nil {
		return nil, nil, wrap(err, "ExecSync", containerID)
	}
	if resp.GetExitCode() != 0 {
		return resp.GetStdout(), resp.GetStderr(), &ExitError{
			ContainerID: containerID, Cmd: cmd, Code: int(resp.GetExitCode()), Stderr: resp.GetStderr(),
		}
	}
	return resp.GetStdout(), resp.GetStderr(), nil
}

// Exec returns the streaming URL of an exec session.
func (c *Client) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.Exec(ctx, req)
	if err != nil {
		return nil, wrap(err, "Exec", req.GetContainerId())
	}
	return resp, nil
}

// Attach returns the streaming URL of an attach session.
func (c *Client) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.Attach(ctx, req)
	if err != nil {
		return nil, wrap(err, "Attach", req.GetContainerId())
	}
	return resp, nil
}

// ReopenContainerLog asks the runtime to reopen a container's log file.
func (c *Client) ReopenContainerLog(ctx context.Context, containerID string) error {
	ctx, cancel := c.call(ctx)
	defer cancel()
	if _, err := c.runtime.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: containerID}); err != nil {
		return wrap(err, "ReopenContainerLog", containerID)
	}
	return nil
}

// CheckpointContainer checkpoints a container. Its own timeout, when set,
// replaces the request timeout.
func (c *Client) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	var cancel context.CancelFunc
	if t := req.GetTimeout(); t > 0 {
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
	} else {
		ctx, cancel = c.call(ctx)
	}
	defer cancel()
	if _, err := c.runtime.CheckpointContainer(ctx, req); err != nil {
		return wrap(err, "CheckpointContainer", req.GetContainerId())
	}
	return nil
}

// ContainerStats returns a container's stats.
func (c *Client) ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: containerID})
	if err != nil {
		return nil, wrap(err, "ContainerStats", containerID)
	}
	return resp.GetStats(), nil
}

// ListContainerStats returns the stats of the containers that match
// filter.
func (c *Client) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
	if err != nil {
		return nil, wrap(err, "ListContainerStats", "")
	}
	return resp.GetStats(), nil
}

// PodSandboxStats returns a sandbox's stats.
func (c *Client) PodSandboxStats(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStats, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: podSandboxID})
	if err != nil {
		return nil, wrap(err, "PodSandboxStats", podSandboxID)
	}
	return resp.GetStats(), nil
}

// ListPodSandboxStats returns the stats of the sandboxes that match
// filter.
func (c *Client) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter})
	if err != nil {
		return nil, wrap(err, "ListPodSandboxStats", "")
	}
	return resp.GetStats(), nil
}

// ListMetricDescriptors returns the descriptors of the runtime's pod
// metrics.
func (c *Client) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.ListMetricDescriptors(ctx, &runtimeapi.ListMetricDescriptorsRequest{})
	if err != nil {
		return nil, wrap(err, "ListMetricDescriptors", "")
	}
	return resp.GetDescriptors(), nil
}

// ListPodSandboxMetrics returns the metrics of every running pod.
func (c *Client) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.ListPodSandboxMetrics(ctx, &runtimeapi.ListPodSandboxMetricsRequest{})
	if err != nil {
		return nil, wrap(err, "ListPodSandboxMetrics", "")
	}
	return resp.GetPodMetrics(), nil
}

// UpdateRuntimeConfig passes runtime configuration (the pod CIDR).
func (c *Client) UpdateRuntimeConfig(ctx context.Context, runtimeConfig *runtimeapi.RuntimeConfig) error {
	ctx, cancel := c.call(ctx)
	defer cancel()
	if _, err := c.runtime.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: runtimeConfig}); err != nil {
		return wrap(err, "UpdateRuntimeConfig", "")
	}
	return nil
}

// Status returns the runtime's conditions (RuntimeReady, NetworkReady).
func (c *Client) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.Status(ctx, &runtimeapi.StatusRequest{Verbose: verbose})
	if err != nil {
		return nil, wrap(err, "Status", "")
	}
	if resp.GetStatus() == nil {
		return nil, fmt.Errorf("CRI Status: the runtime returned no status")
	}
	return resp, nil
}

// RuntimeConfig returns the runtime's configuration (cgroup driver).
func (c *Client) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.runtime.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	if err != nil {
		return nil, wrap(err, "RuntimeConfig", "")
	}
	return resp, nil
}
