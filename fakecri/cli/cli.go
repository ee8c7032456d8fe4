// Package cli is the fakecri command line: the cobra command that both
// `lockstep fakecri` and the standalone `fakecri` binary (cmd/fakecri,
// which links the fake runtime alone, not the agent) run.
package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/fakecri/criserver"
	"github.com/lockstep-dev/lockstep/fakecri/podnet"
	"github.com/lockstep-dev/lockstep/fakecri/streamserver"
)

// NewCommand returns the `fakecri` command: serve the fake CRI runtime on
// a unix socket until SIGTERM or SIGINT.
func NewCommand() *cobra.Command {
	var (
		listen          string
		noEvents        bool
		images          []string
		noDefaultImages bool
		pullLatency     time.Duration
		failPulls       []string
		registryAuths   []string
		imagefsMount    string
		grace           time.Duration
		streamAddr      string
		pprofAddr       string
		podNetwork      string
		hostNetAddr     string
	)
	cmd := &cobra.Command{
		Use:   "fakecri",
		Short: "Serve the scriptable fake CRI v1 runtime on a unix socket",
		Long: `Serve fakecri, a fake CRI v1 runtime that behaves like containerd, on a
unix socket. Containers are scripted with FAKECRI_* environment variables
(see fakecri/README.md). Any CRI client (crictl, a kubelet, lockstep) can
use it. Exec, attach and port-forward streams are served over HTTP
(--stream-address), as containerd's streaming server does. With
--pod-network=loopback each sandbox gets its own loopback address and the
containers' scripted HTTP, TCP and gRPC endpoints are served there, so
real probers reach them. SIGTERM or SIGINT stops it cleanly and removes the socket.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := fakecri.Config{NoEvents: noEvents, PullLatency: pullLatency, ImagefsMountpoint: imagefsMount}
			if err := setPodNetwork(&cfg, podNetwork, hostNetAddr); err != nil {
				return err
			}
			if noDefaultImages {
				cfg.Images = []fakecri.Image{}
			} else {
				cfg.Images = fakecri.DefaultImages()
			}
			for _, spec := range images {
				img, err := fakecri.ParseImage(spec)
				if err != nil {
					return fmt.Errorf("fakecri: --image %q: %w", spec, err)
				}
				cfg.Images = append(cfg.Images, img)
			}
			rt := fakecri.New(cfg)
			for _, ref := range failPulls {
				if err := rt.FailPull(ref, "", 0); err != nil {
					return fmt.Errorf("fakecri: --fail-pull %q: %w", ref, err)
				}
			}
			for _, spec := range registryAuths {
				img, err := fakecri.ParseRegistryAuth(spec)
				if err != nil {
					return fmt.Errorf("fakecri: --registry-auth: %w", err)
				}
				if err := rt.SetRegistryImage(img); err != nil {
					return fmt.Errorf("fakecri: --registry-auth %q: %w", spec, err)
				}
			}
			lis, err := criserver.Listen(listen)
			if err != nil {
				return err
			}
			streams, err := streamserver.Start(rt, streamAddr)
			if err != nil {
				lis.Close()
				return err
			}
			defer streams.Stop()
			if cfg.LoopbackCIDR.IsValid() {
				pods := podnet.Start(rt, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
				defer pods.Stop()
				fmt.Fprintf(cmd.ErrOrStderr(), "fakecri: pod network %s served on loopback (host-network pods: %s)\n", cfg.LoopbackCIDR, describeHostAddress(cfg))
			}
			if pprofAddr != "" {
				stopPprof, addr, err := servePprof(pprofAddr)
				if err != nil {
					lis.Close()
					return fmt.Errorf("fakecri: --pprof-address %q: %w", pprofAddr, err)
				}
				defer stopPprof()
				fmt.Fprintf(cmd.ErrOrStderr(), "fakecri: profiles on http://%s/debug/pprof/\n", addr)
			}
			parent := cmd.Context()
			if parent == nil {
				parent = context.Background()
			}
			ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, os.Interrupt)
			defer stop()
			events := "on"
			if noEvents {
				events = "off"
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "fakecri: serving CRI v1 on %s (container events %s), streams on http://%s\n", listen, events, streams.Addr())
			if err := criserver.Serve(ctx, lis, rt, grace); err != nil {
				return fmt.Errorf("fakecri: serve on %s: %w", listen, err)
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "fakecri: stopped")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "unix:///tmp/lockstep-fakecri.sock", "unix socket endpoint to serve on (unix:///path)")
	f.BoolVar(&noEvents, "no-events", false, "answer GetContainerEvents with Unimplemented, like containerd 1.6")
	f.StringArrayVar(&images, "image", nil, "preload an extra image, as ref or ref=size (e.g. alpine:3.20=7Mi); repeatable")
	f.BoolVar(&noDefaultImages, "no-default-images", false, "do not preload busybox, nginx and the pause image")
	f.DurationVar(&pullLatency, "pull-latency", 0, "how long PullImage takes")
	f.StringArrayVar(&failPulls, "fail-pull", nil, "make pulls of this image fail with a registry \"not found\" error; repeatable")
	f.StringArrayVar(&registryAuths, "registry-auth", nil, "make pulls of this image need these credentials (a pull secret's), as ref=user:password; a pull without them fails 401 Unauthorized; repeatable")
	f.StringVar(&imagefsMount, "imagefs-mountpoint", "", "the imagefs mountpoint ImageFsInfo and container stats report (default containerd's snapshotter dir); beside a real kubelet it must exist, as the kubelet asks cAdvisor about it")
	f.StringVar(&streamAddr, "stream-address", "127.0.0.1:0", "host:port of the exec/attach/port-forward streaming server (port 0 picks one, as containerd does)")
	f.StringVar(&pprofAddr, "pprof-address", "", "host:port to serve Go's /debug/pprof profiles of this process on (plain HTTP, no auth: keep it on loopback); off when empty")
	f.DurationVar(&grace, "shutdown-grace", 5*time.Second, "how long in-flight calls may take on shutdown")
	f.StringVar(&podNetwork, "pod-network", "off", "off: sandbox IPs from 10.88.0.0/16, nothing listens on them; loopback: each sandbox gets its own address of 127.88.0.0/16 and its containers' scripted HTTP/TCP/gRPC endpoints are served there; or a prefix inside 127.0.0.0/8 (e.g. 127.89.0.0/16, for a second fakecri on the host)")
	f.StringVar(&hostNetAddr, "host-network-address", "", "with --pod-network: serve the endpoints of host-network pods on this address (the node's IP the agent probes them at); empty: they are not served")
	return cmd
}

// setPodNetwork applies --pod-network and --host-network-address to cfg.
func setPodNetwork(cfg *fakecri.Config, podNetwork, hostAddr string) error {
	var err error
	if cfg.LoopbackCIDR, cfg.NodeAddress, err = fakecri.ParseNetwork(podNetwork, hostAddr); err != nil {
		return fmt.Errorf("fakecri: --pod-network %q --host-network-address %q: %w", podNetwork, hostAddr, err)
	}
	return nil
}

// describeHostAddress says where host-network pods are served.
func describeHostAddress(cfg fakecri.Config) string {
	if cfg.NodeAddress.IsValid() {
		return cfg.NodeAddress.String()
	}
	return "not served"
}

// servePprof serves the Go runtime's profiles (/debug/pprof/) on addr, so
// a benchmark can read fakecri's own heap and CPU beside the agent's. It
// returns a stop function and the address bound.
func servePprof(addr string) (func(), string, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	return func() { _ = srv.Close() }, lis.Addr().String(), nil
}
