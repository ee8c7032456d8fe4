package agent

import (
	"context"
	"fmt"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/imagegc"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/stats"
)

// newImageGC builds the image garbage collector over the runtime, the
// machine (image filesystem usage) and the root directory (its state
// file).
func newImageGC(d deps.Deps, cfg Config) *imagegc.Manager {
	c := cfg.ImageGC
	c.NodeName = cfg.NodeName
	if c.StateDir == "" {
		c.StateDir = cfg.Node.RootDir
		if c.StateDir == "" {
			c.StateDir = podspec.DefaultRootDir
		}
	}
	ports := imagegc.Ports{Images: d.Images, Containers: d.Runtime, Fs: imageFs{d.Machine}, Files: d.Files, Events: d.API.Events}
	if cfg.Metrics != nil {
		ports.Metrics = cfg.Metrics
	}
	return imagegc.New(d.Core, ports, c)
}

// imageFs reads the image filesystem's usage from the machine, as a
// stats sample does, without measuring the pods' volumes and logs.
type imageFs struct{ machine deps.Machine }

// ImageFsStats implements imagegc.FsStats.
func (f imageFs) ImageFsStats(ctx context.Context) (capacity, available int64, err error) {
	if f.machine == nil {
		return 0, 0, fmt.Errorf("image filesystem usage: no machine port")
	}
	u, err := f.machine.Usage(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("machine usage: %w", err)
	}
	c, a := stats.ImageFsBytes(u)
	return int64(c), int64(a), nil
}
