// Package deviceplugin is the real side of device plugins
// (deviceplugin/v1beta1 over gRPC on unix sockets): the Registration
// service the agent serves on <dir>/kubelet.sock, a client for each
// registered plugin (deps.DevicePlugin), and the server side a plugin
// runs (Serve), which `lockstep deviceplugin` uses for the sample plugin.
package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// KubeletSocket is the registration socket's name in the device plugin
// directory.
const KubeletSocket = "kubelet.sock"

// Registry serves the Registration service and hands each request to the
// agent (deps.DevicePluginRegistry).
type Registry struct {
	pluginapi.UnimplementedRegistrationServer
	dir  string
	reqs chan pending
}

type pending struct {
	req    deps.DeviceRegistration
	plugin deps.DevicePlugin
	answer chan error
}

// NewRegistry returns a registry for the device plugin directory dir.
func NewRegistry(dir string) *Registry {
	return &Registry{dir: dir, reqs: make(chan pending)}
}

// Serve listens on <dir>/kubelet.sock (replacing a stale socket, which
// tells running plugins to register again) until ctx ends.
func (r *Registry) Serve(ctx context.Context) error {
	if err := os.MkdirAll(r.dir, 0o750); err != nil {
		return fmt.Errorf("device plugin directory %s: %w", r.dir, err)
	}
	sock := filepath.Join(r.dir, KubeletSocket)
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale device plugin socket %s: %w", sock, err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("listen on device plugin socket %s: %w", sock, err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, r)
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	if err := srv.Serve(l); err != nil && ctx.Err() == nil {
		return fmt.Errorf("device plugin socket %s: %w", sock, err)
	}
	return nil
}

// Register is the Registration service: it connects to the plugin's
// endpoint and waits for the agent's verdict (the agent asks the plugin
// for its options first; an error here reaches the plugin as the
// Register call's error). A refused plugin's connection is closed: the
// agent never calls it again.
func (r *Registry) Register(ctx context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	if filepath.Base(req.GetEndpoint()) != req.GetEndpoint() || req.GetEndpoint() == "" {
		return nil, fmt.Errorf("register device plugin %q: endpoint %q is not a socket name in %s", req.GetResourceName(), req.GetEndpoint(), r.dir)
	}
	c, err := Dial(filepath.Join(r.dir, req.GetEndpoint()))
	if err != nil {
		return nil, fmt.Errorf("register device plugin %q: %w", req.GetResourceName(), err)
	}
	opts := req.GetOptions()
	p := pending{
		req: deps.DeviceRegistration{Version: req.GetVersion(), ResourceName: req.GetResourceName(),
			Options: deps.DevicePluginOptions{PreStartRequired: opts.GetPreStartRequired(), GetPreferredAllocationAvailable: opts.GetGetPreferredAllocationAvailable()}},
		plugin: c, answer: make(chan error, 1),
	}
	select {
	case r.reqs <- p:
	case <-ctx.Done():
		c.Close()
		return nil, ctx.Err()
	}
	select {
	case err := <-p.answer:
		if err != nil {
			c.Close()
			return nil, err
		}
		return &pluginapi.Empty{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Next implements deps.DevicePluginRegistry.
func (r *Registry) Next(ctx context.Context) (deps.DeviceRegistration, deps.DevicePlugin, func(error), error) {
	select {
	case p := <-r.reqs:
		return p.req, p.plugin, func(err error) { p.answer <- err }, nil
	case <-ctx.Done():
		return deps.DeviceRegistration{}, nil, nil, ctx.Err()
	}
}

// Client is a registered plugin reached over its socket.
type Client struct {
	conn *grpc.ClientConn
	api  pluginapi.DevicePluginClient
}

// Dial connects to the plugin socket at path.
func Dial(path string) (*Client, error) {
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial device plugin %s: %w", path, err)
	}
	return &Client{conn: conn, api: pluginapi.NewDevicePluginClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// GetDevicePluginOptions implements deps.DevicePlugin.
func (c *Client) GetDevicePluginOptions(ctx context.Context) (deps.DevicePluginOptions, error) {
	o, err := c.api.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if err != nil {
		return deps.DevicePluginOptions{}, fmt.Errorf("device plugin GetDevicePluginOptions: %w", err)
	}
	return deps.DevicePluginOptions{PreStartRequired: o.GetPreStartRequired(), GetPreferredAllocationAvailable: o.GetGetPreferredAllocationAvailable()}, nil
}

// ListAndWatch implements deps.DevicePlugin; the connection is closed
// when the stream ends.
func (c *Client) ListAndWatch(ctx context.Context, update func([]deps.Device)) error {
	defer c.Close()
	stream, err := c.api.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		return fmt.Errorf("device plugin ListAndWatch: %w", err)
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return fmt.Errorf("device plugin ListAndWatch: %w", err)
		}
		devs := make([]deps.Device, 0, len(resp.GetDevices()))
		for _, d := range resp.GetDevices() {
			devs = append(devs, deps.Device{ID: d.GetID(), Healthy: d.GetHealth() == pluginapi.Healthy})
		}
		update(devs)
	}
}

// GetPreferredAllocation implements deps.DevicePlugin.
func (c *Client) GetPreferredAllocation(ctx context.Context, available, mustInclude []string, size int) ([]string, error) {
	resp, err := c.api.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: available, MustIncludeDeviceIDs: mustInclude, AllocationSize: int32(size)}}})
	if err != nil {
		return nil, fmt.Errorf("device plugin GetPreferredAllocation: %w", err)
	}
	if len(resp.GetContainerResponses()) != 1 {
		return nil, fmt.Errorf("device plugin GetPreferredAllocation: %d answers for one container", len(resp.GetContainerResponses()))
	}
	return resp.GetContainerResponses()[0].GetDeviceIDs(), nil
}

// Allocate implements deps.DevicePlugin.
func (c *Client) Allocate(ctx context.Context, ids []string) (deps.DeviceAllocation, error) {
	resp, err := c.api.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}}})
	if err != nil {
		return deps.DeviceAllocation{}, fmt.Errorf("device plugin Allocate: %w", err)
	}
	if len(resp.GetContainerResponses()) != 1 {
		return deps.DeviceAllocation{}, fmt.Errorf("device plugin Allocate: %d answers for one container", len(resp.GetContainerResponses()))
	}
	return fromAPI(resp.GetContainerResponses()[0]), nil
}

// PreStartContainer implements deps.DevicePlugin.
func (c *Client) PreStartContainer(ctx context.Context, ids []string) error {
	if _, err := c.api.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: ids}); err != nil {
		return fmt.Errorf("device plugin PreStartContainer: %w", err)
	}
	return nil
}

func fromAPI(r *pluginapi.ContainerAllocateResponse) deps.DeviceAllocation {
	a := deps.DeviceAllocation{Envs: r.GetEnvs(), Annotations: r.GetAnnotations()}
	for _, m := range r.GetMounts() {
		a.Mounts = append(a.Mounts, deps.DeviceMount{ContainerPath: m.GetContainerPath(), HostPath: m.GetHostPath(), ReadOnly: m.GetReadOnly()})
	}
	for _, d := range r.GetDevices() {
		a.Devices = append(a.Devices, deps.DeviceSpec{ContainerPath: d.GetContainerPath(), HostPath: d.GetHostPath(), Permissions: d.GetPermissions()})
	}
	for _, d := range r.GetCdiDevices() {
		a.CDIDevices = append(a.CDIDevices, d.GetName())
	}
	return a
}

func toAPI(a deps.DeviceAllocation) *pluginapi.ContainerAllocateResponse {
	r := &pluginapi.ContainerAllocateResponse{Envs: a.Envs, Annotations: a.Annotations}
	for _, m := range a.Mounts {
		r.Mounts = append(r.Mounts, &pluginapi.Mount{ContainerPath: m.ContainerPath, HostPath: m.HostPath, ReadOnly: m.ReadOnly})
	}
	for _, d := range a.Devices {
		r.Devices = append(r.Devices, &pluginapi.DeviceSpec{ContainerPath: d.ContainerPath, HostPath: d.HostPath, Permissions: d.Permissions})
	}
	for _, n := range a.CDIDevices {
		r.CdiDevices = append(r.CdiDevices, &pluginapi.CDIDevice{Name: n})
	}
	return r
}
