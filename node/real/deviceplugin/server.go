package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// ServeConfig is a device plugin to serve.
type ServeConfig struct {
	// Dir is the device plugin directory (the agent's
	// <root-dir>/device-plugins).
	Dir string
	// Endpoint is the plugin's socket name in Dir.
	Endpoint string
	// Registration is what the plugin registers as; Plugin answers its
	// calls.
	Registration deps.DeviceRegistration
	Plugin       deps.DevicePlugin
	// Log receives what happens (default slog.Default()).
	Log *slog.Logger
	// Poll is how often the registration socket is checked for being
	// recreated (default 1 s).
	Poll time.Duration
}

// Serve serves cfg.Plugin on <Dir>/<Endpoint> and registers it with the
// agent on <Dir>/kubelet.sock, again each time that socket is recreated
// (the agent restarted), until ctx ends.
func Serve(ctx context.Context, cfg ServeConfig) error {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	sock := filepath.Join(cfg.Dir, cfg.Endpoint)
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale plugin socket %s: %w", sock, err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("listen on plugin socket %s: %w", sock, err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, &server{cfg: cfg})
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(l) }()
	defer srv.Stop()

	kubelet := filepath.Join(cfg.Dir, KubeletSocket)
	registered := "" // the kubelet socket registered with (socketID)
	tick := time.NewTicker(cfg.Poll)
	defer tick.Stop()
	for {
		if id := socketID(kubelet); id != "" && id != registered {
			if err := register(ctx, kubelet, cfg); err != nil {
				cfg.Log.Warn("device plugin registration failed; will retry", "resource", cfg.Registration.ResourceName, "error", err.Error())
			} else {
				cfg.Log.Info("device plugin registered", "resource", cfg.Registration.ResourceName, "socket", kubelet)
				registered = id
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			return fmt.Errorf("plugin socket %s: %w", sock, err)
		case <-tick.C:
		}
	}
}

// socketID identifies the socket at path: its inode and modification
// time ("" when there is none), so that a socket recreated under a reused
// inode still differs.
func socketID(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%d@%d", ino, fi.ModTime().UnixNano())
}

func register(ctx context.Context, kubelet string, cfg ServeConfig) error {
	conn, err := grpc.NewClient("unix://"+kubelet, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial %s: %w", kubelet, err)
	}
	defer conn.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	o := cfg.Registration.Options
	_, err = pluginapi.NewRegistrationClient(conn).Register(rctx, &pluginapi.RegisterRequest{
		Version: cfg.Registration.Version, Endpoint: cfg.Endpoint, ResourceName: cfg.Registration.ResourceName,
		Options: &pluginapi.DevicePluginOptions{PreStartRequired: o.PreStartRequired, GetPreferredAllocationAvailable: o.GetPreferredAllocationAvailable},
	})
	if err != nil {
		return fmt.Errorf("register %s with %s: %w", cfg.Registration.ResourceName, kubelet, err)
	}
	return nil
}

// server answers the DevicePlugin service from a deps.DevicePlugin.
type server struct {
	pluginapi.UnimplementedDevicePluginServer
	cfg ServeConfig
}

func (s *server) GetDevicePluginOptions(ctx context.Context, _ *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	o, err := s.cfg.Plugin.GetDevicePluginOptions(ctx)
	if err != nil {
		return nil, err
	}
	return &pluginapi.DevicePluginOptions{PreStartRequired: o.PreStartRequired, GetPreferredAllocationAvailable: o.GetPreferredAllocationAvailable}, nil
}

func (s *server) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	var sendErr error
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	err := s.cfg.Plugin.ListAndWatch(ctx, func(devs []deps.Device) {
		resp := &pluginapi.ListAndWatchResponse{}
		for _, d := range devs {
			h := pluginapi.Unhealthy
			if d.Healthy {
				h = pluginapi.Healthy
			}
			resp.Devices = append(resp.Devices, &pluginapi.Device{ID: d.ID, Health: h})
		}
		if err := stream.Send(resp); err != nil && sendErr == nil {
			sendErr = err
			cancel()
		}
	})
	if sendErr != nil {
		return sendErr
	}
	return err
}

func (s *server) GetPreferredAllocation(ctx context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	resp := &pluginapi.PreferredAllocationResponse{}
	for _, c := range req.GetContainerRequests() {
		ids, err := s.cfg.Plugin.GetPreferredAllocation(ctx, c.GetAvailableDeviceIDs(), c.GetMustIncludeDeviceIDs(), int(c.GetAllocationSize()))
		if err != nil {
			return nil, err
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return resp, nil
}

func (s *server) Allocate(ctx context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.GetContainerRequests() {
		a, err := s.cfg.Plugin.Allocate(ctx, c.GetDevicesIds())
		if err != nil {
			return nil, err
		}
		resp.ContainerResponses = append(resp.ContainerResponses, toAPI(a))
	}
	return resp, nil
}

func (s *server) PreStartContainer(ctx context.Context, req *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	if err := s.cfg.Plugin.PreStartContainer(ctx, req.GetDevicesIds()); err != nil {
		return nil, err
	}
	return &pluginapi.PreStartContainerResponse{}, nil
}
