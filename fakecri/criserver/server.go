// Package criserver serves a fakecri.Runtime as a CRI v1 gRPC runtime and
// image service on a unix socket, on the real clock.
package criserver

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
)

// Register registers rt's RuntimeService and ImageService on s.
func Register(s *grpc.Server, rt *fakecri.Runtime) {
	runtimeapi.RegisterRuntimeServiceServer(s, &runtimeServer{rt: rt})
	runtimeapi.RegisterImageServiceServer(s, &imageServer{rt: rt})
}

// NewGRPCServer returns a gRPC server with rt registered, with containerd's
// message size limits.
func NewGRPCServer(rt *fakecri.Runtime) *grpc.Server {
	s := grpc.NewServer(
		grpc.MaxRecvMsgSize(16<<20),
		grpc.MaxSendMsgSize(16<<20),
	)
	Register(s, rt)
	return s
}

// runtimeServer adapts the Runtime to runtimeapi.RuntimeServiceServer.
// Methods fakecri does not serve (the Stream* lists, like containerd 1.6)
// answer Unimplemented through the embedded type.
type runtimeServer struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	rt *fakecri.Runtime
}

// Version answers the runtime's version.
func (s *runtimeServer) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return s.rt.Version(ctx, req.GetVersion())
}

// RunPodSandbox creates and starts a sandbox.
func (s *runtimeServer) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	id, err := s.rt.RunPodSandbox(ctx, req.GetConfig(), req.GetRuntimeHandler())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

// StopPodSandbox stops a sandbox.
func (s *runtimeServer) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	if err := s.rt.StopPodSandbox(ctx, req.GetPodSandboxId()); err != nil {
		return nil, err
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox removes a sandbox.
func (s *runtimeServer) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	if err := s.rt.RemovePodSandbox(ctx, req.GetPodSandboxId()); err != nil {
		return nil, err
	}
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus returns a sandbox's status.
func (s *runtimeServer) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	return s.rt.PodSandboxStatus(ctx, req.GetPodSandboxId(), req.GetVerbose())
}

// ListPodSandbox lists sandboxes.
func (s *runtimeServer) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	items, err := s.rt.ListPodSandbox(ctx, req.GetFilter())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}

// CreateContainer creates a container.
func (s *runtimeServer) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	id, err := s.rt.CreateContainer(ctx, req.GetPodSandboxId(), req.GetConfig(), req.GetSandboxConfig())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

// StartContainer starts a container.
func (s *runtimeServer) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	if err := s.rt.StartContainer(ctx, req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

// StopContainer stops a container.
func (s *runtimeServer) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	if err := s.rt.StopContainer(ctx, req.GetContainerId(), req.GetTimeout()); err != nil {
		return nil, err
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// RemoveContainer removes a container.
func (s *runtimeServer) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	if err := s.rt.RemoveContainer(ctx, req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// ListContainers lists containers.
func (s *runtimeServer) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	items, err := s.rt.ListContainers(ctx, req.GetFilter())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListContainersResponse{Containers: items}, nil
}

// ContainerStatus returns a container's status.
func (s *runtimeServer) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	return s.rt.ContainerStatus(ctx, req.GetContainerId(), req.GetVerbose())
}

// UpdateContainerResources updates a container's resources.
func (s *runtimeServer) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	res := &runtimeapi.ContainerResources{Linux: req.GetLinux(), Windows: req.GetWindows()}
	if err := s.rt.UpdateContainerResources(ctx, req.GetContainerId(), res); err != nil {
		return nil, err
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// ReopenContainerLog reopens a container's log file.
func (s *runtimeServer) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	if err := s.rt.ReopenContainerLog(ctx, req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

// ExecSync runs a command in a container.
func (s *runtimeServer) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	return s.rt.ExecSyncResponse(ctx, req.GetContainerId(), req.GetCmd(), time.Duration(req.GetTimeout())*time.Second)
}

// Exec answers the streaming URL of a command (Unimplemented without a streaming server).
func (s *runtimeServer) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return s.rt.Exec(ctx, req)
}

// Attach answers the streaming URL of a container's output (Unimplemented without a streaming server).
func (s *runtimeServer) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return s.rt.Attach(ctx, req)
}

// PortForward answers the streaming URL of a sandbox's ports (Unimplemented without a streaming server).
func (s *runtimeServer) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return s.rt.PortForward(ctx, req)
}

// ContainerStats returns a container's stats.
func (s *runtimeServer) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	st, err := s.rt.ContainerStats(ctx, req.GetContainerId())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatsResponse{Stats: st}, nil
}

// ListContainerStats lists container stats.
func (s *runtimeServer) ListContainerStats(ctx context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	st, err := s.rt.ListContainerStats(ctx, req.GetFilter())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: st}, nil
}

// PodSandboxStats returns a sandbox's stats.
func (s *runtimeServer) PodSandboxStats(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	st, err := s.rt.PodSandboxStats(ctx, req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: st}, nil
}

// ListPodSandboxStats lists sandbox stats.
func (s *runtimeServer) ListPodSandboxStats(ctx context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	st, err := s.rt.ListPodSandboxStats(ctx, req.GetFilter())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: st}, nil
}

// UpdateRuntimeConfig records the runtime config.
func (s *runtimeServer) UpdateRuntimeConfig(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	if err := s.rt.UpdateRuntimeConfig(ctx, req.GetRuntimeConfig()); err != nil {
		return nil, err
	}
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}

// Status reports the runtime's conditions.
func (s *runtimeServer) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return s.rt.Status(ctx, req.GetVerbose())
}

// CheckpointContainer is not implemented.
func (s *runtimeServer) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) (*runtimeapi.CheckpointContainerResponse, error) {
	return nil, s.rt.CheckpointContainer(ctx, req)
}

// GetContainerEvents streams container events until the client goes away,
// the runtime restarts or the server shuts down. Response headers are sent
// once the subscription exists, so a client that waits for them
// (stream.Header()) misses no event of a call it makes afterwards.
func (s *runtimeServer) GetContainerEvents(req *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	sub := s.rt.SubscribeEvents("grpc")
	defer sub.Close()
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for {
		ev, err := sub.Next(stream.Context())
		if err != nil {
			return err
		}
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
}

// ListMetricDescriptors is not implemented.
func (s *runtimeServer) ListMetricDescriptors(ctx context.Context, req *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	_, err := s.rt.ListMetricDescriptors(ctx)
	return nil, err
}

// ListPodSandboxMetrics is not implemented.
func (s *runtimeServer) ListPodSandboxMetrics(ctx context.Context, req *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	_, err := s.rt.ListPodSandboxMetrics(ctx)
	return nil, err
}

// RuntimeConfig answers the cgroup driver.
func (s *runtimeServer) RuntimeConfig(ctx context.Context, req *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	return s.rt.RuntimeConfig(ctx)
}

// UpdatePodSandboxResources is not implemented.
func (s *runtimeServer) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return s.rt.UpdatePodSandboxResources(ctx, req)
}

// imageServer adapts the Runtime to runtimeapi.ImageServiceServer.
type imageServer struct {
	runtimeapi.UnimplementedImageServiceServer
	rt *fakecri.Runtime
}

// ListImages lists images.
func (s *imageServer) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	imgs, err := s.rt.ListImages(ctx, req.GetFilter())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListImagesResponse{Images: imgs}, nil
}

// ImageStatus returns an image's status.
func (s *imageServer) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	return s.rt.ImageStatus(ctx, req.GetImage(), req.GetVerbose())
}

// PullImage pulls an image.
func (s *imageServer) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref, err := s.rt.PullImage(ctx, req.GetImage(), req.GetAuth(), req.GetSandboxConfig())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PullImageResponse{ImageRef: ref}, nil
}

// RemoveImage removes an image.
func (s *imageServer) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	if err := s.rt.RemoveImage(ctx, req.GetImage()); err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo reports imagefs usage.
func (s *imageServer) ImageFsInfo(ctx context.Context, req *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	return s.rt.ImageFsInfo(ctx)
}
