package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path"
	"syscall"

	"github.com/spf13/cobra"

	realdp "github.com/lockstep-dev/lockstep/node/real/deviceplugin"
	"github.com/lockstep-dev/lockstep/node/real/world"
	"github.com/lockstep-dev/lockstep/sim/deviceplugin"
)

// newDevicePluginCommand serves the sample device plugin to a running
// agent until SIGTERM or SIGINT.
func newDevicePluginCommand() *cobra.Command {
	var (
		cfg       deviceplugin.Config
		dir       string
		preferred bool
		preStart  bool
	)
	cmd := &cobra.Command{
		Use:   "deviceplugin",
		Short: "Serve a sample device plugin offering fake devices",
		Long: `Serve lockstep's sample device plugin (deviceplugin/v1beta1): --count fake
devices of the extended resource --resource, all healthy. It listens on
<dir>/<name>.sock, registers on <dir>/kubelet.sock (the agent's
<root-dir>/device-plugins) and registers again whenever that socket is
recreated (the agent restarted). Each container allocated devices gets the
environment variable <NAME>_DEVICE (the ids, comma-separated; FOO_DEVICE
for example.com/foo) and a read-only mount of --host-dir at /dev/<name>.
SIGTERM or SIGINT stops it: the agent then marks its devices unhealthy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Count <= 0 {
				return fmt.Errorf("deviceplugin: --count must be positive, got %d", cfg.Count)
			}
			cfg.Preferred, cfg.PreStart = preferred, preStart
			p := deviceplugin.New(cfg, world.Tasks{}.NewSignal)
			if err := os.MkdirAll(p.HostDir(), 0o755); err != nil {
				return fmt.Errorf("deviceplugin: host directory: %w", err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			log.Info("serving sample device plugin", "resource", cfg.Resource, "count", cfg.Count, "dir", dir)
			err := realdp.Serve(ctx, realdp.ServeConfig{Dir: dir, Endpoint: path.Base(cfg.Resource) + ".sock",
				Registration: p.Registration(), Plugin: p, Log: log})
			p.Die()
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Resource, "resource", "example.com/foo", "extended resource name the devices are offered as")
	f.IntVar(&cfg.Count, "count", 4, "number of fake devices")
	f.StringVar(&cfg.HostDir, "host-dir", "", "host directory mounted into containers (default /var/lib/lockstep-deviceplugin/<name>)")
	f.StringVar(&dir, "dir", "/var/lib/lockstep/device-plugins", "the agent's device plugin directory (<root-dir>/device-plugins)")
	f.BoolVar(&preferred, "preferred-allocation", false, "offer GetPreferredAllocation (prefers the highest ids)")
	f.BoolVar(&preStart, "pre-start", false, "ask for PreStartContainer before containers start")
	return cmd
}
