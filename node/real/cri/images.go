package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListImages lists the images that match filter.
func (c *Client) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.images.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: filter})
	if err != nil {
		return nil, wrap(err, "ListImages", "")
	}
	return resp.GetImages(), nil
}

// ImageStatus returns an image's status; the response's Image is nil when
// the image is not present.
func (c *Client) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose})
	if err != nil {
		return nil, wrap(err, "ImageStatus", image.GetImage())
	}
	return resp, nil
}

// PullImage pulls an image and returns its reference. A pull can take
// long: only ctx bounds it, not the request timeout.
func (c *Client) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := c.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: podSandboxConfig})
	if err != nil {
		return "", wrap(err, "PullImage", image.GetImage())
	}
	if resp.GetImageRef() == "" {
		return "", fmt.Errorf("CRI PullImage %q: the runtime returned no image reference", image.GetImage())
	}
	return resp.GetImageRef(), nil
}

// RemoveImage removes an image.
func (c *Client) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	ctx, cancel := c.call(ctx)
	defer cancel()
	if _, err := c.images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: image}); err != nil {
		return wrap(err, "RemoveImage", image.GetImage())
	}
	return nil
}

// ImageFsInfo returns the usage of the image and container filesystems.
func (c *Client) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	ctx, cancel := c.call(ctx)
	defer cancel()
	resp, err := c.images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, wrap(err, "ImageFsInfo", "")
	}
	return resp, nil
}
