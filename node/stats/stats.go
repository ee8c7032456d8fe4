// Package stats samples the node's resource usage: the CRI runtime's pod
// sandbox and container stats, its image filesystem, and the machine's
// memory, filesystems and process count. A Provider takes a sample every
// Period on the injected clock (and on demand, Refresh) and keeps the
// latest; the eviction manager reads it, and the kubelet's stats Summary
// (node/statssummary) is built from it by Summary.
//
// A sample is all or nothing: when any read fails the previous sample is
// kept, so readers never see a node's memory from one instant beside pods
// from another. The pods' volumes and logs are the exception: one that
// cannot be measured is left out of the sample (and logged).
package stats

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/statssummary"
)

// DefaultPeriod is how often a Provider samples (the eviction manager's
// monitoring interval).
const DefaultPeriod = 10 * time.Second

// Sample is one consistent observation of the node and its pods.
type Sample struct {
	// Time is when the sample was taken.
	Time time.Time
	// Machine is the node's capacity; Usage its memory, filesystems and
	// processes.
	Machine deps.MachineInfo
	Usage   deps.MachineUsage
	// ImageFs is the runtime's image filesystem usage (ImageFsInfo); nil
	// when the runtime reports none.
	ImageFs *runtimeapi.FilesystemUsage
	// SandboxStats, ContainerStats and Containers are the runtime's lists;
	// SandboxStats is nil when the runtime lacks ListPodSandboxStats.
	SandboxStats   []*runtimeapi.PodSandboxStats
	ContainerStats []*runtimeapi.ContainerStats
	Containers     []*runtimeapi.Container
	// Volumes are the emptyDir volumes of the managed pods and Logs their
	// containers' log directories, by pod UID (empty without a Disk
	// port). A container's writable layer is in ContainerStats.
	Volumes map[types.UID][]VolumeUsage
	Logs    map[types.UID][]ContainerLogsUsage
}

// ImageFsBytes is the image filesystem's capacity and available bytes:
// the machine's image filesystem when it reports one of its own, else
// the node filesystem (one disk holds both); zeros when neither is known.
func (s Sample) ImageFsBytes() (capacity, available uint64) {
	if s.Usage.ImageFSCapacityBytes > 0 {
		return s.Usage.ImageFSCapacityBytes, s.Usage.ImageFSAvailableBytes
	}
	return s.Usage.NodeFSCapacityBytes, s.Usage.NodeFSAvailableBytes
}

// Summary builds the kubelet's stats Summary of the sample for the given
// pods (see statssummary.Build).
func (s Sample) Summary(nodeName string, pods []*corev1.Pod) *statsv1alpha1.Summary {
	return statssummary.Build(nodeName, s.Time, s.Machine, s.Usage, pods, s.SandboxStats, s.ContainerStats, s.Containers)
}

// Ports are what a Provider reads.
type Ports struct {
	Runtime cri.RuntimeService
	Images  cri.ImageManagerService
	Machine deps.Machine
	// Disk measures the pods' emptyDir volumes and log directories; nil
	// measures none.
	Disk deps.DiskUsage
	// Pods lists the managed pods whose local storage is measured; nil
	// lists none.
	Pods func() []*corev1.Pod
}

// Config tunes a Provider; zero fields take their defaults.
type Config struct {
	// Period is the sampling period (DefaultPeriod).
	Period time.Duration
	// Timeout bounds one sample's calls (default: Period).
	Timeout time.Duration
	// RootDir and PodLogsRoot locate the pods' volumes and log
	// directories ("": podspec's defaults).
	RootDir, PodLogsRoot string
}

// Provider samples the node's usage and keeps the latest sample.
type Provider struct {
	d     deps.Core
	ports Ports
	cfg   Config
	log   *slog.Logger

	mu     sync.Mutex
	latest *Sample
	warned bool
}

// warnOnce logs msg the first time only.
func (p *Provider) warnOnce(msg string, err error) {
	p.mu.Lock()
	warned := p.warned
	p.warned = true
	p.mu.Unlock()
	if !warned {
		p.log.Warn(msg, "error", err.Error())
	}
}

// New returns a Provider; nothing is sampled until Start or Refresh.
func New(d deps.Core, ports Ports, cfg Config) *Provider {
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = cfg.Period
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Provider{d: d, ports: ports, cfg: cfg, log: log}
}

// Start spawns the "stats sampler" task, sampling every Period until ctx
// ends.
func (p *Provider) Start(ctx context.Context) {
	p.d.Tasks.Go("stats sampler", func() {
		t := p.d.Tasks.NewTicker("stats sample", p.cfg.Period)
		defer t.Stop()
		for {
			if _, err := p.Refresh(ctx); err != nil && ctx.Err() == nil {
				p.log.Warn("stats sample failed", "error", err.Error())
			}
			if t.Wait(ctx) != nil {
				return
			}
		}
	})
}

// Latest returns the newest sample, false before the first one.
func (p *Provider) Latest() (Sample, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.latest == nil {
		return Sample{}, false
	}
	return *p.latest, true
}

// Refresh takes a sample now, keeps it as the latest and returns it.
func (p *Provider) Refresh(ctx context.Context) (Sample, error) {
	cctx, cancel := p.d.Clock.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	s, err := p.sample(cctx)
	if err != nil {
		return Sample{}, err
	}
	p.mu.Lock()
	if p.latest == nil || !s.Time.Before(p.latest.Time) {
		p.latest = &s
	}
	p.mu.Unlock()
	return s, nil
}

// sample reads everything a Sample holds.
func (p *Provider) sample(ctx context.Context) (Sample, error) {
	s := Sample{Time: p.d.Clock.Now()}
	var err error
	if s.Machine, err = p.ports.Machine.Info(ctx); err != nil {
		return Sample{}, fmt.Errorf("machine info: %w", err)
	}
	if s.Usage, err = p.ports.Machine.Usage(ctx); err != nil {
		return Sample{}, fmt.Errorf("machine usage: %w", err)
	}
	s.SandboxStats, err = p.ports.Runtime.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{})
	if err != nil && ctx.Err() == nil {
		// Pod stats are then summed over containers (containerd 1.6
		// lacks the call, or fails it for a sandbox without a cgroup).
		if status.Code(err) != codes.Unimplemented {
			p.warnOnce("pod sandbox stats unavailable; pod usage is summed over containers", err)
		}
		s.SandboxStats, err = nil, nil
	}
	if err != nil {
		return Sample{}, fmt.Errorf("list pod sandbox stats: %w", err)
	}
	if s.ContainerStats, err = p.ports.Runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{}); err != nil {
		return Sample{}, fmt.Errorf("list container stats: %w", err)
	}
	if s.Containers, err = p.ports.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{}); err != nil {
		return Sample{}, fmt.Errorf("list containers: %w", err)
	}
	if p.ports.Images != nil {
		fs, err := p.ports.Images.ImageFsInfo(ctx)
		if err != nil {
			return Sample{}, fmt.Errorf("image fs info: %w", err)
		}
		if l := fs.GetImageFilesystems(); len(l) > 0 {
			s.ImageFs = l[0]
		}
	}
	if p.ports.Disk != nil && p.ports.Pods != nil {
		disk, err := measureDisk(ctx, p.ports.Disk, p.cfg, p.ports.Pods())
		if err != nil {
			p.log.Warn("local storage partly unmeasured", "error", err.Error())
		}
		s.Volumes, s.Logs = disk.Volumes, disk.Logs
	}
	return s, nil
}
