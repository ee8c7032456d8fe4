package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	clientmetrics "k8s.io/client-go/tools/metrics"
	cri "k8s.io/cri-api/pkg/apis"

	"github.com/lockstep-dev/lockstep/node/agent"
	"github.com/lockstep-dev/lockstep/node/certs"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/eviction"
	"github.com/lockstep-dev/lockstep/node/images"
	"github.com/lockstep-dev/lockstep/node/metrics"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/node/pleg"
	"github.com/lockstep-dev/lockstep/node/podspec"
	realcri "github.com/lockstep-dev/lockstep/node/real/cri"
	"github.com/lockstep-dev/lockstep/node/real/deviceplugin"
	"github.com/lockstep-dev/lockstep/node/real/dirwatch"
	"github.com/lockstep-dev/lockstep/node/real/du"
	"github.com/lockstep-dev/lockstep/node/real/kube"
	"github.com/lockstep-dev/lockstep/node/real/logind"
	"github.com/lockstep-dev/lockstep/node/real/machine"
	"github.com/lockstep-dev/lockstep/node/real/manifesthttp"
	"github.com/lockstep-dev/lockstep/node/real/memcg"
	"github.com/lockstep-dev/lockstep/node/real/mounter"
	"github.com/lockstep-dev/lockstep/node/real/netstats"
	"github.com/lockstep-dev/lockstep/node/real/osfiles"
	"github.com/lockstep-dev/lockstep/node/real/probenet"
	"github.com/lockstep-dev/lockstep/node/real/server"
	"github.com/lockstep-dev/lockstep/node/real/world"
	"github.com/lockstep-dev/lockstep/node/runtimesync"
	"github.com/lockstep-dev/lockstep/node/stats"
	cgroups "github.com/opencontainers/cgroups"
)

// Version is the agent's version, written on the Node as the
// lockstep.dev/version annotation (nodeInfo.kubeletVersion reports the
// Kubernetes release lockstep stands in for).
const Version = "lockstep v0.1.0"

// Runtime is the container runtime the daemon drives.
type Runtime struct {
	Runtime cri.RuntimeService
	Images  cri.ImageManagerService
	// Events feeds the evented PLEG; nil relists only.
	Events deps.ContainerEvents
	// Type prefixes container IDs in statuses ("containerd").
	Type string
	// Close releases the connection.
	Close func()
}

// DialRuntime connects to the CRI runtime at o.RuntimeEndpoint; with
// o.RuntimeEvents its container events feed the evented PLEG.
func DialRuntime(ctx context.Context, o Options) (Runtime, error) {
	c, err := realcri.Dial(ctx, o.RuntimeEndpoint, realcri.Options{
		RequestTimeout: o.RuntimeRequestTimeout, ImageEndpoint: o.ImageEndpoint,
	})
	if err != nil {
		return Runtime{}, err
	}
	typ := "cri"
	if v := c.DialVersion(); v != nil && v.GetRuntimeName() != "" {
		typ = v.GetRuntimeName()
	}
	rt := Runtime{Runtime: c, Images: c, Type: typ, Close: func() { _ = c.Close(context.Background()) }}
	if o.RuntimeEvents {
		rt.Events = c.EventSource()
	}
	return rt, nil
}

// Run runs the node agent until ctx ends. Containers outlive it: stopping
// the daemon stops no container, as with the kubelet.
func Run(ctx context.Context, o Options, rt Runtime, log *slog.Logger) error {
	// A fatal condition found while running (a client certificate lost
	// for good) ends the run with its cause.
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	n, err := prepare(ctx, o, rt, log, fail)
	if err != nil {
		return err
	}
	defer n.close()
	if err := serve(ctx, o, n); err != nil {
		return err
	}
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// node is an agent built with its real world, not started yet.
type node struct {
	a             *agent.Agent
	d             deps.Deps
	name          string
	ips           []netip.Addr
	reg, probeReg *prometheus.Registry
	cs            kubernetes.Interface
	serving       *certs.Manager // the serving certificate (--rotate-server-certificates)
	log           *slog.Logger
	closers       []func()
}

func (n *node) close() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i]()
	}
}

// prepare builds the agent and its real world from the options; the
// certificate tasks it starts end with ctx, and call fail when the client
// certificate is lost for good.
func prepare(ctx context.Context, o Options, rt Runtime, log *slog.Logger, fail context.CancelCauseFunc) (_ *node, err error) {
	n := &node{}
	defer func() {
		if err != nil {
			n.close()
		}
	}()
	id, err := identify(o)
	if err != nil {
		return nil, err
	}
	log = log.With("node", id.name)
	for _, dir := range []string{o.RootDir, o.PodLogsRoot, o.ContainerLogsDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create directory %s: %w", dir, err)
		}
	}
	d, mach, err := n.localDeps(ctx, o, rt, log)
	if err != nil {
		return nil, err
	}
	reg, probeReg := prometheus.NewRegistry(), prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// client-go keeps its request hooks in package variables: registered
	// once per process, before the first request.
	clientmetrics.Register(metrics.NewRESTClient(reg).Hooks())
	cs, err := n.connect(ctx, o, &d, id, log, fail)
	if err != nil {
		return nil, err
	}
	cfg, err := agentConfig(o, rt, id, mach, hostResolver(o, log), metrics.NewWithProbes(reg, probeReg))
	if err != nil {
		return nil, err
	}
	a, err := agent.New(d, cfg)
	if err != nil {
		return nil, err
	}
	n.a, n.d, n.name, n.ips, n.reg, n.probeReg, n.cs, n.log = a, d, id.name, id.ips, reg, probeReg, cs, log
	return n, nil
}

// identity is who the node is: its name, addresses and registration
// taints, from the options and the host.
type identity struct {
	name string
	ips  []netip.Addr
	// addrs are ips as strings; the first is the node IP, the second (if
	// any) the secondary one.
	addrs  []string
	taints []corev1.Taint
}

// identify resolves the node's name and addresses and parses its taints.
func identify(o Options) (identity, error) {
	name, err := resolveNodeName(o.NodeName)
	if err != nil {
		return identity{}, err
	}
	given, err := ParseNodeIPs(o.NodeIP)
	if err != nil {
		return identity{}, fmt.Errorf("invalid --node-ip=%s: %w", o.NodeIP, err)
	}
	ips, err := chooseNodeIPs(given, name, hostIPSources())
	if err != nil {
		return identity{}, err
	}
	id := identity{name: name, ips: ips, addrs: make([]string, len(ips))}
	for i, ip := range ips {
		id.addrs[i] = ip.String()
	}
	if id.taints, err = ParseTaints(o.RegisterWithTaints); err != nil {
		return identity{}, fmt.Errorf("invalid --register-with-taints: %w", err)
	}
	return id, nil
}

// secondaryIP is the node's second address ("": none).
func (id identity) secondaryIP() string {
	if len(id.addrs) > 1 {
		return id.addrs[1]
	}
	return ""
}

// localDeps builds the agent's ports to this host: the clock and tasks,
// the runtime, the machine, files, mounts, probes, cgroups, graceful
// shutdown, memory threshold and OOM notifications, and the device plugin
// registry (served until ctx ends). What must be closed with the node is
// added to n's closers.
func (n *node) localDeps(ctx context.Context, o Options, rt Runtime, log *slog.Logger) (deps.Deps, *machine.Machine, error) {
	mach := machine.New(machine.Options{RootDir: o.RootDir})
	info, err := mach.Info(ctx)
	if err != nil {
		return deps.Deps{}, nil, fmt.Errorf("read the machine: %w", err)
	}
	if !info.CgroupV2 && o.SingleProcessOOMKill != nil && !*o.SingleProcessOOMKill {
		return deps.Deps{}, nil, fmt.Errorf("invalid %s: this host runs cgroup v1, where an OOM kill always kills a single process; leave singleProcessOOMKill unset or true",
			o.describe("single-process-oom-kill", false))
	}
	d := deps.Deps{
		Core:    deps.Core{Clock: world.Clock(), Rand: world.NewRand(), Tasks: world.Tasks{}, Log: log},
		Runtime: rt.Runtime, Images: rt.Images, RuntimeEvents: rt.Events, Machine: mach, Files: osfiles.New(), Mounts: mounter.New(),
		ProbeNet: probenet.New(), Disk: du.New(),
	}
	if o.ManifestURL != "" {
		d.ManifestHTTP = manifesthttp.New(o.HTTPCheckFrequency)
	}
	if o.ManifestPath != "" {
		// The process's lifetime: the watch ends with it.
		d.ManifestChanges = dirwatch.New()
	}
	if len(o.ShutdownGroups()) > 0 {
		d.Shutdown = logind.New()
	} else {
		log.Info("graceful node shutdown is off (shutdownGracePeriod is 0)")
	}
	if err := checkCgroupDriver(ctx, rt.Runtime, o); err != nil {
		return deps.Deps{}, nil, err
	}
	if d.Cgroups, err = cgroupPort(o); err != nil {
		return deps.Deps{}, nil, err
	}
	n.notifiers(&d, info, log)
	plugins := deviceplugin.NewRegistry(devicePluginDir(o))
	go func() {
		if err := plugins.Serve(ctx); err != nil {
			log.Error("device plugin registration stopped; no device plugin can register", "error", err.Error())
		}
	}()
	d.DevicePlugins = plugins
	return d, mach, nil
}

// devicePluginDir is where device plugins register and their allocations
// are checkpointed.
func devicePluginDir(o Options) string { return filepath.Join(o.RootDir, "device-plugins") }

// notifiers gives d the memory threshold notifier and the kernel's OOM
// kill reports, where the host has them (closed with the node).
func (n *node) notifiers(d *deps.Deps, info deps.MachineInfo, log *slog.Logger) {
	if mn, err := memoryNotifier(info); err != nil {
		log.Warn("no memory threshold notifier: memory pressure is seen at the eviction manager's periodic cycles", "error", err.Error())
	} else {
		// Closed with the node, not when prepare returns.
		n.closers = append(n.closers, func() { mn.Close() })
		d.MemoryThreshold = mn
	}
	if kmsg, err := machine.OpenKmsg(""); err != nil {
		log.Warn("kernel OOM kills will not be reported as SystemOOM events", "error", err.Error())
	} else {
		n.closers = append(n.closers, func() { kmsg.Close() })
		d.OOMKills = kmsg
	}
}

// connect joins the cluster when there is a kubeconfig (bootstrapping and
// rotating the client certificate, and the serving one with
// --rotate-server-certificates), gives d its apiserver ports and returns
// the clientset (nil standalone).
func (n *node) connect(ctx context.Context, o Options, d *deps.Deps, id identity, log *slog.Logger, fail context.CancelCauseFunc) (kubernetes.Interface, error) {
	if o.Kubeconfig == "" {
		log.Info("no --kubeconfig: running standalone (static pods only)", "manifests", o.ManifestPath)
		return nil, nil
	}
	j, err := join(ctx, d.Core, o, id.name, log)
	if err != nil {
		return nil, err
	}
	rc := j.config
	if j.rotator != nil {
		d.Tasks.Go("client certificate rotation", func() { j.rotator.Run(ctx) })
		go watchClientCert(ctx, j.rotator, log, fail)
	}
	eventQPS := float32(o.EventQPS)
	if eventQPS == 0 {
		eventQPS = -1 // eventRecordQPS 0: no limit
	}
	kc, err := kube.NewForConfig(rc, float32(o.APIQPS), int(o.APIBurst), kube.Options{NodeName: id.name, EventQPS: eventQPS, EventBurst: int(o.EventBurst)})
	if err != nil {
		return nil, fmt.Errorf("apiserver client from %s: %w", o.Kubeconfig, err)
	}
	n.closers = append(n.closers, kc.Shutdown)
	d.API = kc.API()
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("apiserver client from %s: %w", o.Kubeconfig, err)
	}
	log.Info("connected to the apiserver", "host", rc.Host)
	if o.RotateServerCertificates {
		if n.serving, err = servingCerts(d.Core, o, cs, id.name, netIPs(id.ips)); err != nil {
			return nil, err
		}
		d.Tasks.Go("serving certificate rotation", func() { n.serving.Run(ctx) })
	}
	return cs, nil
}

// hostResolver is the host's resolver configuration (--resolv-conf), what
// Default DNS pods get; unreadable, they get an empty one.
func hostResolver(o Options, log *slog.Logger) podspec.ResolvConf {
	if o.ResolvConf == "" {
		return podspec.ResolvConf{}
	}
	data, err := os.ReadFile(o.ResolvConf)
	if err != nil {
		log.Warn("cannot read the host resolver configuration; Default DNS pods get an empty one", "file", o.ResolvConf, "error", err.Error())
		return podspec.ResolvConf{}
	}
	return podspec.ParseResolvConf(data)
}

// agentConfig is the agent's configuration from the options, the node's
// identity and its machine.
func agentConfig(o Options, rt Runtime, id identity, mach *machine.Machine, hostDNS podspec.ResolvConf, m *metrics.Metrics) (agent.Config, error) {
	thresholds, err := o.EvictionThresholds()
	if err != nil {
		return agent.Config{}, fmt.Errorf("eviction thresholds: %w", err)
	}
	logRotation, err := o.GC.LogRotation()
	if err != nil {
		return agent.Config{}, fmt.Errorf("container log rotation: %w", err)
	}
	return agent.Config{
		Metrics: m,
		ImageGC: o.GC.ImageGC(), LogRotation: logRotation,
		Eviction: eviction.Config{
			Thresholds: thresholds, MaxPodGracePeriod: int64(o.EvictionMaxPodGracePeriod),
			PressureTransitionPeriod: o.EvictionPressureTransitionPeriod,
		},
		NodeName: id.name, ManifestDir: o.ManifestPath, DevicePluginDir: devicePluginDir(o),
		ManifestURL: o.ManifestURL, ManifestURLHeader: o.ManifestURLHeader, HTTPCheckFrequency: o.HTTPCheckFrequency,
		ShutdownGroups:       o.ShutdownGroups(),
		AllowedUnsafeSysctls: o.AllowedUnsafeSysctls,
		FileCheckFrequency:   o.FileCheckFrequency, SyncFrequency: o.SyncFrequency,
		Node: podspec.NodeInfo{
			NodeName: id.name, HostIP: id.addrs[0], HostIPs: id.addrs, ClusterDNS: o.ClusterDNS, ClusterDomain: o.ClusterDomain,
			ResolverConfig: o.ResolvConf, HostDNS: hostDNS, PodLogsRoot: o.PodLogsRoot,
			ContainerLogsDir: o.ContainerLogsDir, RootDir: o.RootDir,
			SeccompDefault: o.SeccompDefault, SeccompProfileRoot: filepath.Join(o.RootDir, "seccomp"),
			SingleProcessOOMKill: o.SingleProcessOOMKill != nil && *o.SingleProcessOOMKill,
			ThermalThrottlePaths: mach.ThermalThrottlePaths(),
		},
		RuntimeSync: runtimesync.Config{GC: &runtimesync.GCPolicy{
			MinAge:             o.MinimumContainerTTLDuration,
			MaxPerPodContainer: int(o.MaxDeadContainersPerContainer),
			MaxContainers:      int(o.MaxDeadContainers),
		}, Images: images.Config{ParallelPulls: o.ParallelImagePulls()}},
		RuntimeType:   rt.Type,
		PodNetwork:    podNetwork(rt),
		KernelStats:   kernelStats(rt, o),
		PLEG:          pleg.Config{UseEvents: rt.Events != nil},
		Cgroups:       o.Cgroups.Config(),
		CPUManager:    o.CPUManagerConfig(),
		MemoryManager: o.MemoryManagerConfig(), TopologyManagerPolicy: o.MemoryManager.TopologyPolicy,
		NodeStatus: nodestatus.Config{
			NodeIP: id.addrs[0], SecondaryNodeIP: id.secondaryIP(), KubeletPort: o.Port, MaxPods: int(o.MaxPods), AgentVersion: Version,
			Labels: o.NodeLabels, Taints: id.taints, NoRegister: !o.RegisterNode, Unschedulable: !o.RegisterSchedulable,
			MaxImages:             int(o.NodeStatusMaxImages),
			StatusUpdateFrequency: o.NodeStatusUpdateFrequency, StatusReportFrequency: o.NodeStatusReportFrequency,
			LeaseDuration: time.Duration(o.NodeLeaseDurationSeconds) * time.Second,
			Reserved:      o.NodeReserved(),
		},
	}, nil
}

// serve starts the agent and its HTTP server and runs until ctx ends.
func serve(ctx context.Context, o Options, n *node) error {
	a, d, nodeName, ips, reg, probeReg, cs, log := n.a, n.d, n.name, n.ips, n.reg, n.probeReg, n.cs, n.log
	a.Start(ctx)

	scfg := server.Config{
		Address: o.Address, Port: int(o.Port), ReadOnlyPort: int(o.ReadOnlyPort),
		HealthzAddress: o.HealthzBindAddress, HealthzPort: int(o.HealthzPort),
		TLSCertFile: o.TLSCertFile, TLSKeyFile: o.TLSKeyFile, CertDir: o.CertDirectory(),
		ClientCAFile: o.ClientCAFile,
		Metrics:      metrics.Handler(reg), ProbeMetrics: metrics.Handler(probeReg),
		Configz:    o.KubeletConfiguration(),
		SystemLogs: o.EnableSystemLogHandler, Profiling: o.EnableProfilingHandler,
	}
	scfg.NodeIPs = netIPs(ips)
	if n.serving != nil {
		scfg.ServingCertificate = n.serving.Current
	}
	if cs != nil {
		scfg.Authenticator = server.TokenReviewAuthenticator(cs)
		if o.AuthorizationMode == "Webhook" {
			scfg.Authorizer = server.SubjectAccessReviewAuthorizer(cs)
		}
	}
	if o.AuthorizationMode == "AlwaysAllow" {
		scfg.Authorizer = server.AlwaysAllow{}
	}
	srv, err := server.New(&provider{a: a, d: d, node: nodeName, logs: o.PodLogsRoot, loopAge: max(2*o.SyncFrequency, 5*time.Minute)}, scfg, log)
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	attrs := []any{"secure", srv.SecureAddr().String()}
	if ro := srv.ReadOnlyAddr(); ro != nil {
		attrs = append(attrs, "readOnly", ro.String())
	}
	if h := srv.HealthzAddr(); h != nil {
		attrs = append(attrs, "healthz", h.String())
	}
	log.Info("lockstep node is running", attrs...)
	if ro := srv.ReadOnlyAddr(); ro != nil {
		log.Info(fmt.Sprintf("look: curl -s http://%s/pods | jq '.items[] | {name: .metadata.name, phase: .status.phase}'; curl -s http://%s/metrics | grep ^kubelet_", ro, ro))
	}
	<-ctx.Done()
	<-srv.Done()
	log.Info("lockstep node stopped; its containers keep running")
	return nil
}

// netIPs converts addresses to net.IPs.
func netIPs(ips []netip.Addr) []net.IP {
	out := make([]net.IP, 0, len(ips))
	for _, ip := range ips {
		out = append(out, net.IP(ip.AsSlice()))
	}
	return out
}

// podNetwork reads pods' network namespaces for the stats when the
// runtime is a real one (containerd's verbose sandbox status names the
// sandbox's process); the in-process fake runtime has none.
func podNetwork(rt Runtime) stats.NetworkReader {
	if rt.Type == "fakecri" {
		return nil
	}
	return netstats.Reader{Runtime: rt.Runtime}
}

// resolveNodeName is the node name asked for, or the host name lowercased.
func resolveNodeName(name string) (string, error) {
	if name != "" {
		return name, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("node name: no --hostname-override and no host name: %w", err)
	}
	return strings.ToLower(host), nil
}

// provider is what the HTTP server reports on.
type provider struct {
	a       *agent.Agent
	d       deps.Deps
	node    string
	logs    string
	loopAge time.Duration
}

func (p *provider) Pods() []*corev1.Pod {
	pods := p.a.Pods()
	out := make([]*corev1.Pod, 0, len(pods))
	for _, pod := range pods {
		c := pod.DeepCopy()
		if s, ok := p.a.PodStatus(pod.UID); ok {
			c.Status = s
		}
		out = append(out, c)
	}
	return out
}

func (p *provider) Healthy() error {
	var errs []error
	if age := p.d.Clock.Since(p.a.LastLoop()); age > p.loopAge {
		errs = append(errs, fmt.Errorf("syncloop: last ran %v ago (more than %v)", age.Round(time.Second), p.loopAge))
	}
	if ok, err := p.a.PLEGHealthy(); !ok {
		errs = append(errs, fmt.Errorf("pleg: %w", err))
	}
	return errors.Join(errs...)
}

// NodeRegistration says why the Node is not registered yet, for
// /healthz?verbose.
func (p *provider) NodeRegistration() error { return p.a.NodeRegistration() }

func (p *provider) Runtime() cri.RuntimeService { return p.d.Runtime }

// Stats is the agent's latest stats sample, or one taken now before the
// first.
func (p *provider) Stats(ctx context.Context) (stats.Sample, error) {
	if s, ok := p.a.Stats().Latest(); ok {
		return s, nil
	}
	return p.a.Stats().Refresh(ctx)
}

func (p *provider) NodeName() string    { return p.node }
func (p *provider) PodLogsRoot() string { return p.logs }

// memoryNotifier opens the memcg threshold notifier on the root of the
// cgroup v1 memory hierarchy; cgroup v2 has none (see node/real/memcg).
func memoryNotifier(info deps.MachineInfo) (*memcg.Notifier, error) {
	if info.CgroupV2 {
		return nil, errors.New("cgroup v2 has no memory usage threshold events")
	}
	root, err := cgroups.FindCgroupMountpoint("", "memory")
	if err != nil {
		return nil, fmt.Errorf("find the memory cgroup mount: %w", err)
	}
	return memcg.New(root)
}
