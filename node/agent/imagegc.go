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
// stats sampler (image filesystem usage) and the root directory (its
// state file).
func newImageGC(d deps.Deps, cfg Config, sampler *stats.Provider) *imagegc.Manager {
	c := cfg.ImageGC
	c.NodeName = cfg.NodeName
	if c.StateDir == "" {
		c.StateDir = cfg.Node.RootDir
		if c.StateDir == "" {
			c.StateDir = podspec.DefaultRootDir
		}
	}
	ports := imagegc.Ports{Images: d.Images, Containers: d.Runtime, Fs: imageFs{sampler}, Files: d.Files, Events: d.API.Events}
	if cfg.Metrics != nil {
		ports.Metrics = cfg.Metrics
	}
	return imagegc.New(d.Core, ports, c)
}

// imageFs reads the image filesystem's usage from a fresh stats sample.
type imageFs struct{ s *stats.Provider }

// ImageFsStats implements imagegc.FsStats.
func (f imageFs) ImageFsStats(ctx context.Context) (capacity, available int64, err error) {
	s, err := f.s.Refresh(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("stats sample: %w", err)
	}
	c, a := s.ImageFsBytes()
	return int64(c), int64(a), nil
}
