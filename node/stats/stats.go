// Package stats samples the node's resource usage: the CRI runtime's pod
// sandbox and container stats, its image filesystem, and the machine's
// memory, CPU, filesystems and process count; and, through the DiskUsage
// port, the pods' volumes and container logs, each directory walked once a
// sample for both of its readers. A Provider takes a sample every
// Period on the injected clock (and on demand, Refresh) and keeps the
// latest; the eviction manager reads it, and the kubelet's stats Summary
// (node/statssummary) is built from it by Summary. CPU rates the runtime
// leaves out are computed from the previous sample.
//
// The runtime's and the machine's part of a sample is all or nothing: when
// one of those reads fails the previous sample is kept, so readers never
// see a node's memory from one instant beside pods from another. What the
// agent measures itself (volumes, logs, the pods' network where the
// runtime has no sandbox stats) is best effort: what cannot be read is
// left out and logged once.
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
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podstate"
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
	// VolumeUsage is what each pod's emptyDir, configMap and secret
	// volumes hold on disk: pod UID → volume name → usage. Only the pods
	// the Pods port lists are measured; nil without a Disk port. The
	// eviction manager (local storage limits) and the stats Summary both
	// read this one measurement.
	VolumeUsage map[types.UID]map[string]FsUsage
	// LogsUsage is what each container's log files hold (all its
	// instances, the container's log directory as upstream measures it):
	// pod UID → container name → usage. Nil without a Disk port. A
	// container's writable layer is in RootfsUsage.
	LogsUsage map[types.UID]map[string]FsUsage
	// RootfsUsage is each running container's writable layer as the
	// runtime reports it: pod UID → container name → usage.
	RootfsUsage map[types.UID]map[string]FsUsage
	// NodeCPU is the node's own CPU usage (Machine.Usage's cumulative
	// time, its rate from the sample before); nil when the machine does
	// not report it, and the node's CPU is then the pods' sum.
	NodeCPU *runtimeapi.CpuUsage
	// Kernel is what the Cgroups port read of the running containers'
	// and pods' cgroups, the node's root and its system containers, with
	// their CPU rates; nil without the port.
	Kernel *KernelStats
	// Started is when the Provider was made (the agent's start: the
	// kubelet system container's start time).
	Started time.Time
}

// ImageFsBytes is the image filesystem's capacity and available bytes:
// the machine's image filesystem when it reports one of its own, else
// the node filesystem (one disk holds both); zeros when neither is known.
func (s Sample) ImageFsBytes() (capacity, available uint64) { return ImageFsBytes(s.Usage) }

// ImageFsBytes is the image filesystem's capacity and available bytes in
// the machine's usage u: its image filesystem when it reports one of its
// own, else the node filesystem; zeros when neither is known.
func ImageFsBytes(u deps.MachineUsage) (capacity, available uint64) {
	if u.ImageFSCapacityBytes > 0 {
		return u.ImageFSCapacityBytes, u.ImageFSAvailableBytes
	}
	return u.NodeFSCapacityBytes, u.NodeFSAvailableBytes
}

// FsUsage is the space and inodes some files take (statssummary's type,
// which the Summary reports).
type FsUsage = statssummary.FsUsage

// Summary builds the kubelet's stats Summary of the sample for the given
// pods (see statssummary.Build).
func (s Sample) Summary(nodeName string, pods []*corev1.Pod) *statsv1alpha1.Summary {
	return statssummary.Build(nodeName, s.Time, s.Machine, s.Usage, pods, s.SandboxStats, s.ContainerStats, s.Containers,
		statssummary.LocalUsage{Volumes: s.VolumeUsage, Logs: s.LogsUsage, NodeCPU: s.NodeCPU, Kernel: s.summaryKernel()})
}

// Runtime is what a Provider reads of the CRI runtime: the sandboxes and
// containers, and their stats (all at once, or one container's where the
// list lacks it). The whole cri.RuntimeService is one.
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
	ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error)
}

// ImageFS is what a Provider reads of the CRI image service: the image
// filesystem's usage. The whole cri.ImageManagerService is one.
type ImageFS interface {
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// Ports are what a Provider reads.
type Ports struct {
	Runtime Runtime
	// Images reports the image filesystem; nil reports none.
	Images  ImageFS
	Machine deps.Machine
	// Pods lists the managed pods whose local storage is measured; nil
	// lists none.
	Pods PodLister
	// Disk, with Pods, measures the pods' volumes and container log
	// directories (VolumeUsage, LogsUsage); nil measures none.
	Disk deps.DiskUsage
	// Network, when set, reads each ready pod sandbox's network usage
	// where the runtime reports no sandbox stats (real nodes: the
	// sandbox's network namespace, node/real/netstats); nil leaves the
	// pods' network out then.
	Network NetworkReader
	// Cgroups, when set, reads the kernel's figures of the containers',
	// pods' and system cgroups (Sample.Kernel); nil reads none.
	Cgroups deps.CgroupStatsReader
}

// NetworkReader reads one pod sandbox's network usage; nil usage for a
// sandbox without a network of its own (host network).
type NetworkReader interface {
	PodNetwork(ctx context.Context, sandboxID string) (*runtimeapi.NetworkUsage, error)
}

// PodLister lists the pods whose volumes and logs a sample measures.
type PodLister interface {
	// ActivePods are the pods running on the node.
	ActivePods() []*corev1.Pod
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
	// started is when the Provider was made.
	started time.Time
	// warned: a runtime stats call failed once already; warnedDisk: a
	// volume or log measurement; warnedNetwork: a sandbox's network read;
	// warnedCgroups: a cgroup read.
	warned, warnedDisk, warnedNetwork, warnedCgroups bool
	// cpu are the last CPU readings by "c/<container ID>",
	// "s/<sandbox ID>" and "node", for the rates of the next sample.
	cpu map[string]cpuReading
}

// warnOnce logs msg and err unless *warned says it was logged already,
// and sets it.
func (p *Provider) warnOnce(warned *bool, msg string, err error) {
	p.mu.Lock()
	already := *warned
	*warned = true
	p.mu.Unlock()
	if !already {
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
	return &Provider{d: d, ports: ports, cfg: cfg, log: log, started: d.Clock.Now()}
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
	s, err := p.sample(cctx, true)
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

// RefreshNode takes a sample now without measuring the pods' volumes and
// logs (VolumeUsage and LogsUsage stay nil), for a reader of node-level
// figures only (the eviction manager after a node-level reclaim); it is
// not kept as the latest.
func (p *Provider) RefreshNode(ctx context.Context) (Sample, error) {
	cctx, cancel := p.d.Clock.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	return p.sample(cctx, false)
}

// sample reads everything a Sample holds; the pods' volumes and logs only
// when local is true.
func (p *Provider) sample(ctx context.Context, local bool) (Sample, error) {
	s := Sample{Time: p.d.Clock.Now(), Started: p.started}
	var err error
	if s.Machine, err = p.ports.Machine.Info(ctx); err != nil {
		return Sample{}, fmt.Errorf("machine info: %w", err)
	}
	if s.Usage, err = p.ports.Machine.Usage(ctx); err != nil {
		return Sample{}, fmt.Errorf("machine usage: %w", err)
	}
	if cpu := s.Usage.CPUUsageCoreNanoSeconds; cpu > 0 {
		s.NodeCPU = &runtimeapi.CpuUsage{Timestamp: s.Time.UnixNano(), UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpu}}
	}
	s.SandboxStats, err = p.ports.Runtime.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{})
	if err != nil && ctx.Err() == nil {
		// Pod stats are then summed over containers (containerd 1.6
		// lacks the call, or fails it for a sandbox without a cgroup).
		if status.Code(err) != codes.Unimplemented {
			p.warnOnce(&p.warned, "pod sandbox stats unavailable; pod usage is summed over containers", err)
		}
		s.SandboxStats, err = nil, nil
	}
	if err != nil {
		return Sample{}, fmt.Errorf("list pod sandbox stats: %w", err)
	}
	var netdev map[string][]deps.NetInterface
	switch {
	case s.SandboxStats == nil && p.ports.Network != nil:
		s.SandboxStats, netdev = p.sandboxNetworks(ctx)
	case p.ports.Cgroups != nil && isInterfaceReader(p.ports.Network):
		// The runtime's sandbox stats have no packet or drop counters
		// (containerd 1.6 reports the default interface's bytes and
		// errors only): the kernel's figures take every interface's
		// full counters from the sandbox's network namespace.
		_, netdev = p.sandboxNetworks(ctx)
	}
	statsList, statsErr := p.ports.Runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if s.Containers, err = p.ports.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{}); err != nil {
		return Sample{}, fmt.Errorf("list containers: %w", err)
	}
	if s.ContainerStats, err = p.containerStats(ctx, statsList, statsErr, s.Containers); err != nil {
		return Sample{}, err
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
	if local && p.ports.Disk != nil && p.ports.Pods != nil {
		measured, err := measureLocal(ctx, p.ports.Disk, p.cfg, p.ports.Pods.ActivePods())
		if err != nil {
			p.warnOnce(&p.warnedDisk, "local storage partly unmeasured", err)
		}
		s.VolumeUsage, s.LogsUsage = measured.Volumes, measured.Logs
	}
	if p.ports.Cgroups != nil {
		s.Kernel = p.readKernel(ctx, s.Containers)
	}
	if netdev != nil {
		if s.Kernel == nil {
			s.Kernel = &KernelStats{}
		}
		s.Kernel.Network = netdev
	}
	p.fillSampleNanoCores(&s)
	s.RootfsUsage = rootfsUsage(s.Containers, s.ContainerStats)
	dropAnnotations(&s)
	return s, nil
}

// dropAnnotations clears the annotations the runtime's lists carry for
// every sandbox and container: nothing reading a sample uses them (labels
// name the pod and container), and the sample is kept until the next one,
// so they would cost a few kilobytes a pod for nothing.
func dropAnnotations(s *Sample) {
	for _, sb := range s.SandboxStats {
		if a := sb.GetAttributes(); a != nil {
			a.Annotations = nil
		}
	}
	for _, c := range s.ContainerStats {
		if a := c.GetAttributes(); a != nil {
			a.Annotations = nil
		}
	}
	for _, c := range s.Containers {
		c.Annotations = nil
	}
}

// containerStats is the containers' stats: list, as ListContainerStats
// answered, or when it failed as a whole (err: containerd 1.6 fails it
// when one container's metrics cannot be read, e.g. one just exiting),
// each running container asked alone, those that answer kept, so that one
// container does not blank the node's stats; the failure is logged once.
func (p *Provider) containerStats(ctx context.Context, list []*runtimeapi.ContainerStats, err error, containers []*runtimeapi.Container) ([]*runtimeapi.ContainerStats, error) {
	if err == nil || ctx.Err() != nil {
		if err != nil {
			return nil, fmt.Errorf("list container stats: %w", err)
		}
		return list, nil
	}
	p.warnOnce(&p.warned, "listing container stats failed; asking each running container", err)
	var out []*runtimeapi.ContainerStats
	for _, c := range containers {
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		cs, err := p.ports.Runtime.ContainerStats(ctx, c.GetId())
		if ctx.Err() != nil {
			return nil, fmt.Errorf("stats of container %s: %w", c.GetId(), ctx.Err())
		}
		if err == nil && cs != nil {
			out = append(out, cs)
		}
	}
	return out, nil
}

// sandboxNetworks stands in for the runtime's sandbox stats when it has
// none: one entry per ready pod sandbox holding only the network usage the
// Network port reads (pod CPU and memory then stay the containers' sums).
// What cannot be read (the list, a sandbox's network) is left out, logged
// once: the pods' network is the least of a sample. Where the port reads
// every interface's full counters (InterfaceReader), they are returned
// too, by sandbox ID.
func (p *Provider) sandboxNetworks(ctx context.Context) ([]*runtimeapi.PodSandboxStats, map[string][]deps.NetInterface) {
	sandboxes, err := p.ports.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		p.warnOnce(&p.warnedNetwork, "pod network usage unavailable", fmt.Errorf("list pod sandboxes: %w", err))
		return nil, nil
	}
	var out []*runtimeapi.PodSandboxStats
	var counters map[string][]deps.NetInterface
	ir, full := p.ports.Network.(InterfaceReader)
	if full {
		counters = map[string][]deps.NetInterface{}
	}
	for _, sb := range sandboxes {
		if sb.GetLabels()[podstate.LabelPodUID] == "" {
			continue
		}
		var net *runtimeapi.NetworkUsage
		var err error
		if full {
			var ifaces []deps.NetInterface
			if ifaces, err = ir.PodInterfaces(ctx, sb.GetId()); err == nil && ifaces != nil {
				counters[sb.GetId()] = ifaces
				net = NetworkUsage(ifaces, p.d.Clock.Now().UnixNano())
			}
		} else {
			net, err = p.ports.Network.PodNetwork(ctx, sb.GetId())
		}
		if err != nil {
			p.warnOnce(&p.warnedNetwork, "pod network usage unavailable", err)
			continue
		}
		if net == nil {
			continue
		}
		out = append(out, &runtimeapi.PodSandboxStats{
			Attributes: &runtimeapi.PodSandboxAttributes{Id: sb.GetId(), Metadata: sb.GetMetadata(), Labels: sb.GetLabels(), Annotations: sb.GetAnnotations()},
			Linux:      &runtimeapi.LinuxPodSandboxStats{Network: net},
		})
	}
	return out, counters
}

// isInterfaceReader reports whether r reads every interface's full
// counters.
func isInterfaceReader(r NetworkReader) bool {
	_, ok := r.(InterfaceReader)
	return ok
}

// DefaultInterface is the pod interface the Summary reports inline, as
// the kubelet does.
const DefaultInterface = "eth0"

// NetworkUsage is the CRI form of interfaces' counters at ts, eth0 also
// as the default interface.
func NetworkUsage(ifaces []deps.NetInterface, ts int64) *runtimeapi.NetworkUsage {
	out := &runtimeapi.NetworkUsage{Timestamp: ts}
	for _, i := range ifaces {
		iface := &runtimeapi.NetworkInterfaceUsage{Name: i.Name,
			RxBytes: &runtimeapi.UInt64Value{Value: i.RxBytes}, RxErrors: &runtimeapi.UInt64Value{Value: i.RxErrors},
			TxBytes: &runtimeapi.UInt64Value{Value: i.TxBytes}, TxErrors: &runtimeapi.UInt64Value{Value: i.TxErrors}}
		out.Interfaces = append(out.Interfaces, iface)
		if i.Name == DefaultInterface {
			out.DefaultInterface = iface
		}
	}
	return out
}
