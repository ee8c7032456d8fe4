package fakecri

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// unimplemented is the error of a CRI method fakecri does not serve.
func unimplemented(method string) error {
	return status.Errorf(codes.Unimplemented, "fakecri does not implement %s", method)
}

// CheckpointContainer is not implemented, as in containerd 1.6.
func (r *Runtime) CheckpointContainer(ctx context.Context, options *runtimeapi.CheckpointContainerRequest) error {
	return r.unimplementedCall(ctx, "CheckpointContainer")
}

// UpdatePodSandboxResources is not implemented, as in containerd 1.6.
func (r *Runtime) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return nil, r.unimplementedCall(ctx, "UpdatePodSandboxResources")
}

// CheckpointPod is not implemented.
func (r *Runtime) CheckpointPod(ctx context.Context, options *runtimeapi.CheckpointPodRequest) error {
	return r.unimplementedCall(ctx, "CheckpointPod")
}

// RestorePod is not implemented.
func (r *Runtime) RestorePod(ctx context.Context, options *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	return nil, r.unimplementedCall(ctx, "RestorePod")
}

// ListMetricDescriptors is not implemented.
func (r *Runtime) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	return nil, r.unimplementedCall(ctx, "ListMetricDescriptors")
}

// ListPodSandboxMetrics is not implemented.
func (r *Runtime) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	return nil, r.unimplementedCall(ctx, "ListPodSandboxMetrics")
}

// unimplementedCall runs the call's faults, then answers Unimplemented.
func (r *Runtime) unimplementedCall(ctx context.Context, method string) error {
	if err := r.enter(ctx, method, callTarget{}); err != nil {
		return err
	}
	return unimplemented(method)
}
