// Package harness assembles a complete simulated node from one seed: the
// real agent (node/agent) over the deterministic kernel, the in-process fake
// CRI runtime, the simulated apiserver and an in-memory manifest directory.
// Scenarios drive it between runs: create and delete pods, inject faults,
// crash and restart the agent.
package harness

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/agent"
	"github.com/lockstep-dev/lockstep/node/certs"
	"github.com/lockstep-dev/lockstep/node/cm/cgroups"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/eviction"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/choice"
	"github.com/lockstep-dev/lockstep/sim/deviceplugin"
	"github.com/lockstep-dev/lockstep/sim/kernel"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// Config sets up a simulated node.
type Config struct {
	// Seed identifies the run.
	Seed uint64
	// Choices overrides the seeded choice source (e.g. rapid-backed).
	Choices choice.Source
	// Trace receives the trace as JSON lines (nil: hash only).
	Trace io.Writer
	// NodeName defaults to "sim-node".
	NodeName string
	// ManifestDir defaults to /etc/kubernetes/manifests.
	ManifestDir string
	// Agent is the agent's configuration; NodeName and ManifestDir are
	// filled in.
	Agent agent.Config
	// Runtime tweaks the fake runtime's configuration (clock, randomness,
	// signals and files are filled in).
	Runtime fakecri.Config
	// Replay formats the command that replays a failing run. Default: the
	// go test command of the test that called New (from the call stack).
	Replay func(seed uint64) string
	// EventedPLEG makes the agent's PLEG consume the runtime's container
	// events and relist rarely, as it does on a runtime that implements
	// GetContainerEvents.
	EventedPLEG bool
	// KernelStats gives the agent's stats the simulated kernel's figures
	// of the containers' cgroups (their page-rounded memory limits).
	KernelStats bool
	// NoCgroups runs the agent without pod and QoS cgroups
	// (--cgroups-per-qos=false); otherwise, when Agent.Cgroups is left
	// zero, the kubelet's defaults apply: cgroupfs under "/", kubepods
	// limited to allocatable.
	NoCgroups bool
	// ShutdownMaxDelay is the simulated logind's InhibitDelayMaxSec
	// (default 5 minutes).
	ShutdownMaxDelay time.Duration
	// ManifestURL is the agent's --manifest-url, served by the scripted
	// server (ServeManifest); empty: no HTTP source.
	ManifestURL string
	// ClientCertLifetime, when positive, gives the node a client
	// certificate of that lifetime, issued through a CSR by the simulated
	// apiserver's approver and signer (5 s after each request) and renewed
	// by a node/certs manager started with each agent, as the daemon's
	// --bootstrap-kubeconfig --rotate-certificates do. The pair survives
	// agent crashes (CertStore, the disk).
	ClientCertLifetime time.Duration
	// AppArmor: the machine's kernel has AppArmor enabled
	// (deps.MachineInfo.AppArmor). False, the default, is a host without
	// it, on which pods asking for an AppArmor profile are refused.
	AppArmor bool
	// CPUs is the machine's CPU topology (see Topology); nil: one socket
	// and one NUMA node of single-thread cores, as many as the node
	// model's CPU capacity. When set, the node's CPU capacity follows it.
	CPUs []deps.CPUInfo
	// DevicePlugins are fake device plugins running from the start; when
	// set the agent gets a device plugin registry (AddDevicePlugin adds
	// more).
	DevicePlugins []deviceplugin.Config
	// Faults turns the agent's fault points on at these rates (see
	// DrawFaults); empty: off, the agent's Core.Faults nil as in
	// production.
	Faults FaultRates
}

// DevicePluginDir is the simulated agent's device plugin directory.
const DevicePluginDir = "/var/lib/lockstep/device-plugins"

// Harness is one simulated node.
type Harness struct {
	K       *kernel.Kernel
	Runtime *fakecri.Runtime
	API     *apiserver.Server
	Files   *memfs.FS
	Mounts  *memfs.Mounts // the tmpfs mounts of volumes, over Files
	// Cgroups is the node's cgroup tree, which the agent keeps.
	Cgroups  *CgroupTree
	NodeName string

	// Certs is the node's client certificate store (ClientCertLifetime).
	Certs *CertStore

	cfg       Config
	agent     *agent.Agent
	certs     *certs.Manager
	group     *kernel.Group
	cancel    context.CancelFunc
	restarts  int
	traced    *tracingRuntime // the runtime as the agent sees it: calls traced
	ooms      oomKills        // the kernel's OOM kills, scripted
	memcg     *memoryNotifier // the memcg threshold notifier, scripted
	shutdown  *nodeShutdown   // logind, scripted
	manifests *manifestServer // the --manifest-url server, scripted
	// registry is where the running agent's device plugins register (a
	// new one for every agent, as the registration socket is recreated);
	// plugins are the fake plugins by resource, in order of addition.
	registry *deviceplugin.Registry
	plugins  []*deviceplugin.Plugin
	// faults are the fault points of every agent of this node (nil: off).
	faults *faultPoints
	// stopWatch ends the running agent's watch of the file tree.
	stopWatch func()
}

// New builds the world; the agent is not started yet.
func New(cfg Config) *Harness {
	if cfg.NodeName == "" {
		cfg.NodeName = "sim-node"
	}
	if cfg.ManifestDir == "" {
		cfg.ManifestDir = "/etc/kubernetes/manifests"
	}
	if cfg.Replay == nil {
		cfg.Replay = callerReplay()
	}
	if cfg.ShutdownMaxDelay == 0 {
		cfg.ShutdownMaxDelay = 5 * time.Minute
	}
	if cfg.Agent.Eviction.Thresholds == nil {
		cfg.Agent.Eviction.Thresholds = defaultThresholds()
	}
	k := kernel.New(kernel.Config{Seed: cfg.Seed, Choices: cfg.Choices, Trace: cfg.Trace, Replay: cfg.Replay})
	files := memfs.New()
	_ = files.MkdirAll(cfg.ManifestDir)
	_ = files.MkdirAll("/var/log/pods")
	files.WriteFile("/etc/hosts", []byte(NodeHosts(cfg.NodeName)))
	rc := cfg.Runtime
	rc.Clock, rc.Rand, rc.NewSignal, rc.Files = k, k.Rand(), func(name string) fakecri.Signal { return k.NewSignal(name) }, files
	if rc.IDSeed == 0 {
		rc.IDSeed = cfg.Seed
	}
	if cfg.CPUs != nil {
		node := fakecri.DefaultNodeModel()
		if rc.Node != nil {
			node = *rc.Node
		}
		node.CPUCapacityMilli = uint64(len(cfg.CPUs)) * 1000
		rc.Node = &node
	}
	rt := fakecri.New(rc)
	api := apiserver.New(apiserver.Config{Clock: k, Tasks: k.Tasks(), Rand: k.Rand(), Log: k.Logger().With("component", "apiserver"),
		Node: cfg.NodeName})
	traceWrites(k, api)
	if cfg.ClientCertLifetime > 0 {
		api.User().SignCSRs(&apiserver.CSRPolicy{Delay: 5 * time.Second, Duration: cfg.ClientCertLifetime})
	}
	h := &Harness{K: k, Runtime: rt, API: api, Files: files, Mounts: memfs.NewMounts(files), Cgroups: NewCgroupTree(rt), NodeName: cfg.NodeName, cfg: cfg,
		Certs:  &CertStore{},
		traced: newTracingRuntime(rt, k), ooms: oomKills{deps.NewInbox[deps.OOMKill](k.Tasks(), "kernel oom kills")},
		memcg: &memoryNotifier{rt: rt, sig: k.Tasks().NewSignal("memcg threshold")},
		shutdown: &nodeShutdown{k: k, events: deps.NewInbox[bool](k.Tasks(), "logind shutdown signals"), maxDelay: cfg.ShutdownMaxDelay,
			state: &ShutdownState{Started: -1, Released: -1}},
		manifests: newManifestServer(k)}
	if len(cfg.Faults) > 0 {
		h.faults = newFaultPoints(k, cfg.Seed, cfg.Faults)
	}
	for _, pc := range cfg.DevicePlugins {
		h.AddDevicePlugin(pc)
	}
	return h
}

// defaultThresholds are the kubelet's default hard eviction thresholds,
// which every simulated node has unless its configuration says otherwise.
func defaultThresholds() []eviction.Threshold {
	ts, err := eviction.ParseThresholds(nil, nil, nil, nil, true)
	if err != nil {
		panic(err) // the defaults parse
	}
	return ts
}

// NodeHosts is the simulated node's /etc/hosts, which host-network pods'
// managed hosts files copy.
func NodeHosts(nodeName string) string {
	return "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + nodeName + "\n"
}

// DefaultCgroups is the simulated agent's cgroup configuration unless
// told otherwise: the kubelet's defaults (cgroupfs under "/", kubepods
// limited to allocatable).
func DefaultCgroups() cgroups.Config {
	return cgroups.Config{CgroupsPerQOS: true, Root: "/", Driver: cgroups.DriverCgroupfs, EnforcePods: true}
}

// ClusterDomain is the cluster's DNS domain the agent is configured with
// (Config.Agent.Node.ClusterDomain): a fact of the cluster, which pods'
// FQDNs end in.
func (h *Harness) ClusterDomain() string { return h.cfg.Agent.Node.ClusterDomain }

// AppArmor reports whether the simulated machine has AppArmor enabled
// (Config.AppArmor): a fact of the world, not the agent's decision.
func (h *Harness) AppArmor() bool { return h.cfg.AppArmor }

// CgroupConfig is the cgroup configuration agents of this harness run
// with.
func (h *Harness) CgroupConfig() cgroups.Config {
	switch {
	case h.cfg.NoCgroups:
		return cgroups.Config{}
	case h.cfg.Agent.Cgroups == (cgroups.Config{}):
		return DefaultCgroups()
	}
	return h.cfg.Agent.Cgroups
}

// AgentSandbox reports whether an agent of this harness created the
// sandbox id (others are made by hand, as another node agent would).
func (h *Harness) AgentSandbox(id string) bool {
	_, ok := h.traced.names[id]
	return ok
}

// Agent is the running agent (nil before StartAgent).
func (h *Harness) Agent() *agent.Agent { return h.agent }

// AgentConfig is the configuration every agent of this node starts with
// (NodeName and ManifestDir aside).
func (h *Harness) AgentConfig() agent.Config { return h.cfg.Agent }

// Machine is the node's machine information as the agent reads it (its
// CPU topology and NUMA nodes).
func (h *Harness) Machine() deps.MachineInfo {
	info, _ := machineModel{h.Runtime, h.NodeName, h.cfg.CPUs, h.cfg.AppArmor}.Info(context.Background())
	return info
}

// Restarts is how many times the agent was (re)started.
func (h *Harness) Restarts() int { return h.restarts }

// StartAgent starts a new agent process with no memory of earlier ones:
// everything it knows it must learn from the runtime and the apiserver.
func (h *Harness) StartAgent() {
	if h.agent != nil {
		panic("harness: StartAgent with an agent running; CrashAgent first")
	}
	h.restarts++
	h.group = h.K.NewGroup(fmt.Sprintf("agent-%d", h.restarts))
	log := h.K.Logger().With("component", "agent", "node", h.NodeName)
	tasks := h.K.TasksIn(h.group)
	d := deps.Deps{
		Core:    deps.Core{Clock: h.K, Rand: h.K.Rand(), Tasks: tasks, Log: log},
		Runtime: h.traced,
		Images:  h.Runtime,
		// Events go through client-go's correlator, as the kubelet's, with
		// the kubelet's source component.
		API: deps.API{Pods: tracingPods{h.API, h.K}, Nodes: h.API, Leases: h.API,
			Events:     apiserver.NewRecorder(h.API, h.K, corev1.EventSource{Component: "kubelet", Host: h.NodeName}),
			ConfigMaps: h.API, Secrets: h.API, Services: h.API, RuntimeClasses: h.API, Tokens: h.API, ObjectWatches: h.API, Claims: h.API, TrustBundles: h.API, NodeWatch: h.API},
		Files:           h.Files,
		Mounts:          h.Mounts,
		Cgroups:         h.Cgroups,
		Machine:         machineModel{h.Runtime, h.NodeName, h.cfg.CPUs, h.cfg.AppArmor},
		Disk:            diskUsage{h.Files, h.Runtime},
		ProbeNet:        probeNet{h.Runtime, tasks},
		OOMKills:        h.ooms,
		MemoryThreshold: h.memcg,
		Shutdown:        h.shutdown,
	}
	if h.faults != nil {
		d.Faults = h.faults
	}
	if h.cfg.ManifestURL != "" {
		d.ManifestHTTP = h.manifests
	}
	d.ManifestChanges, h.stopWatch = newDirChanges(h.Files, tasks)
	cfg := h.cfg.Agent
	cfg.NodeName = h.NodeName
	cfg.ManifestDir = h.cfg.ManifestDir
	cfg.ManifestURL = h.cfg.ManifestURL
	if cfg.RuntimeType == "" {
		cfg.RuntimeType = "fakecri"
	}
	cfg.Cgroups = h.CgroupConfig()
	if h.cfg.KernelStats {
		cfg.KernelStats = kernelStats{h.Runtime}
	}
	if len(h.cfg.DevicePlugins) > 0 {
		h.registry = deviceplugin.NewRegistry(h.K.Tasks())
		d.DevicePlugins = h.registry
		cfg.DevicePluginDir = DevicePluginDir
		for _, p := range h.plugins {
			if !p.Dead() {
				h.registry.Register(p.Registration(), p, nil)
			}
		}
	}
	if h.cfg.EventedPLEG {
		cfg.PLEG.UseEvents = true
		d.RuntimeEvents = runtimeEvents{h.Runtime}
	}
	a, err := agent.New(d, cfg)
	if err != nil {
		panic(fmt.Sprintf("harness: the agent cannot start: %v", err))
	}
	h.agent = a
	ctx, cancel := h.K.WithCancel(context.Background())
	h.cancel = cancel
	h.agent.Start(ctx)
	if h.cfg.ClientCertLifetime > 0 {
		m := certs.New(d.Core, certs.Ports{CSR: h.API, Keys: KeyGen{Rand: h.K.Rand()}, Store: h.Certs},
			certs.Config{Name: "client certificate of node " + h.NodeName, Request: certs.ClientRequest(h.NodeName)})
		h.certs = m
		tasks.Go("client certificate", func() {
			if err := m.Ensure(ctx); err != nil && ctx.Err() == nil {
				log.Warn("client certificate bootstrap failed; the rotation loop retries", "err", err.Error())
			}
			m.Run(ctx)
		})
	}
}

// ClientCert is the running agent's client certificate manager (nil
// without ClientCertLifetime or while the agent is down).
func (h *Harness) ClientCert() *certs.Manager { return h.certs }

// CrashAgent kills the agent's every task where it stands, like a SIGKILL:
// in-flight runtime and API calls are abandoned half-way.
func (h *Harness) CrashAgent() {
	if h.agent == nil {
		return
	}
	h.K.KillGroup(h.group)
	h.cancel()
	h.stopWatch()
	h.shutdown.state.Inhibited = false // logind drops a dead process's lock
	h.agent, h.group, h.cancel, h.certs = nil, nil, nil, nil
	h.registry = nil
	for _, p := range h.plugins {
		p.Disconnect() // the dead agent's streams are gone
	}
}

// AddDevicePlugin starts a fake device plugin, which registers with the
// running agent now and with every agent started later, as the sample
// plugin re-registers when the registration socket is recreated
// (Config.DevicePlugins must not be empty for the agent to have a
// registry).
func (h *Harness) AddDevicePlugin(cfg deviceplugin.Config) *deviceplugin.Plugin {
	p := deviceplugin.New(cfg, func(name string) deps.Signal { return h.K.NewSignal(name) })
	_ = h.Files.MkdirAll(p.HostDir())
	h.plugins = append(h.plugins, p)
	if h.registry != nil {
		h.registry.Register(p.Registration(), p, nil)
	}
	return p
}

// RestartDevicePlugin brings a faulty plugin back: its faults are cleared
// (a dead one revives) and, when it is down (see deviceplugin.State), it
// registers again.
func (h *Harness) RestartDevicePlugin(p *deviceplugin.Plugin) {
	if !p.Heal() {
		return
	}
	if h.registry != nil {
		h.registry.Register(p.Registration(), p, nil)
	}
}

// RegisterDevicePlugin has p register again with the running agent, as
// it is, faults and all (a plugin process restarted in some state).
func (h *Harness) RegisterDevicePlugin(p *deviceplugin.Plugin) {
	if h.registry != nil {
		h.registry.Register(p.Registration(), p, nil)
	}
}

// DevicePlugins are the fake device plugins, in order of addition.
func (h *Harness) DevicePlugins() []*deviceplugin.Plugin { return slices.Clone(h.plugins) }

// Close ends the simulation and every goroutine in it.
func (h *Harness) Close() { h.K.Close() }

// Logger returns a logger writing to the trace.
func (h *Harness) Logger() *slog.Logger { return h.K.Logger() }

// ReplayCommand is the command that replays this run, as failure reports
// print it.
func (h *Harness) ReplayCommand() string { return h.cfg.Replay(h.cfg.Seed) }
