package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/fakecri/podnet"
	"github.com/lockstep-dev/lockstep/fakecri/streamserver"
	"github.com/lockstep-dev/lockstep/node/real/daemon"
	"github.com/lockstep-dev/lockstep/node/regress"
)

// newNodeCommand runs the node agent as a daemon.
func newNodeCommand() *cobra.Command {
	o := daemon.Defaults()
	fake := fakeNetwork{PodNetwork: "loopback"}
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run the node agent (a kubelet) against a CRI runtime and, with --kubeconfig, an apiserver",
		Long: `Run lockstep as a node agent. With --kubeconfig it registers the node with the
apiserver and runs the pods bound to it; without, it runs standalone with static
pods from --pod-manifest-path only. --container-runtime-endpoint=fake runs the
in-process fake runtime (the demo). Flags are named like the kubelet's; a
--config file of kind KubeletConfiguration (kubelet.config.k8s.io/v1beta1) may
set the same options, and flags override it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseRegressionBuild(regress.Tags()); err != nil {
				return err
			}
			if err := resolveNodeOptions(cmd.Flags(), &o); err != nil {
				return err
			}
			log := newLogger(o.Verbosity)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return runNode(ctx, o, fake, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fake.PodNetwork, "fake-pod-network", fake.PodNetwork,
		"with --container-runtime-endpoint=fake: off (virtual pod IPs, probes find nothing), loopback (each pod gets an address of 127.88.0.0/16 where its scripted endpoints answer, as `lockstep fakecri --pod-network` serves them) or a prefix inside 127.0.0.0/8")
	f.StringVar(&fake.HostAddress, "fake-host-network-address", fake.HostAddress,
		"with --container-runtime-endpoint=fake and a pod network: serve host-network pods' endpoints on this address (e.g. the --node-ip); empty: not served")
	f.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig of the node's apiserver identity; empty runs standalone (static pods only)")
	f.StringVar(&o.BootstrapKubeconfig, "bootstrap-kubeconfig", o.BootstrapKubeconfig,
		"kubeconfig with bootstrap credentials (a bootstrap token): when --kubeconfig is missing or its client certificate expired, request one with a CSR and write --kubeconfig pointing at <cert-dir>/kubelet-client-current.pem")
	f.StringVar(&o.CertDir, "cert-dir", o.CertDir, "directory of the node's certificates (default: <root-dir>/pki)")
	f.BoolVar(&o.RotateCertificates, "rotate-certificates", o.RotateCertificates,
		"renew the client certificate through a CSR at 70–90 % of its lifetime, without a restart")
	f.BoolVar(&o.RotateServerCertificates, "rotate-server-certificates", o.RotateServerCertificates,
		"request the serving certificate from the kubernetes.io/kubelet-serving signer (CSR) and renew it, instead of a self-signed one")
	f.StringVar(&o.ConfigFile, "config", o.ConfigFile, "KubeletConfiguration file (kubelet.config.k8s.io/v1beta1); flags override it")
	f.StringVar(&o.NodeName, "hostname-override", o.NodeName, "node name (default: the host name, lowercased)")
	f.StringVar(&o.NodeIP, "node-ip", o.NodeIP, "the node's IP address, or a comma-separated dual-stack pair (one IPv4, one IPv6); default: the host name's address, else the default route's interface address, never loopback")
	f.StringVar(&o.RuntimeEndpoint, "container-runtime-endpoint", o.RuntimeEndpoint, `CRI runtime socket, or "fake" for the in-process fake runtime`)
	f.StringVar(&o.ImageEndpoint, "image-service-endpoint", o.ImageEndpoint, "CRI image service socket (default: the runtime endpoint)")
	f.StringVar(&o.ManifestPath, "pod-manifest-path", o.ManifestPath, "directory of static pod manifests")
	f.StringVar(&o.RootDir, "root-dir", o.RootDir, "directory for lockstep's files (pods' volumes, checkpoints, certificates); made a shared mount at start (bind-mounted onto itself unless it lies on a shared mount already), as the kubelet does, so that mountPropagation Bidirectional and HostToContainer work")
	f.StringVar(&o.PodLogsRoot, "pod-logs-dir", o.PodLogsRoot, "directory of pod log directories")
	f.StringVar(&o.ContainerLogsDir, "container-logs-dir", o.ContainerLogsDir, "directory of the container log symlinks log shippers tail")
	f.DurationVar(&o.MinimumContainerTTLDuration, "minimum-container-ttl-duration", o.MinimumContainerTTLDuration, "minimum age of a dead container before it is garbage collected")
	f.Int32Var(&o.MaxDeadContainersPerContainer, "maximum-dead-containers-per-container", o.MaxDeadContainersPerContainer, "dead instances kept per container (<0: no limit)")
	f.Int32Var(&o.MaxDeadContainers, "maximum-dead-containers", o.MaxDeadContainers, "dead containers kept on the node in all (<0: no limit)")
	f.Int32Var(&o.MaxPods, "max-pods", o.MaxPods, "most pods this node runs")
	f.DurationVar(&o.SyncFrequency, "sync-frequency", o.SyncFrequency, "resync period of a running pod")
	f.DurationVar(&o.FileCheckFrequency, "file-check-frequency", o.FileCheckFrequency, "how often the manifest directory is read")
	f.DurationVar(&o.NodeStatusUpdateFrequency, "node-status-update-frequency", o.NodeStatusUpdateFrequency, "how often node status is computed")
	f.DurationVar(&o.NodeStatusReportFrequency, "node-status-report-frequency", o.NodeStatusReportFrequency, "how often node status is written when unchanged")
	f.Int32Var(&o.NodeLeaseDurationSeconds, "node-lease-duration-seconds", o.NodeLeaseDurationSeconds, "duration of the node lease")
	f.DurationVar(&o.RuntimeRequestTimeout, "runtime-request-timeout", o.RuntimeRequestTimeout, "timeout of CRI calls (except pulls)")
	f.StringVar(&o.Address, "address", o.Address, "IP address the HTTP server listens on")
	f.Int32Var(&o.Port, "port", o.Port, "secure (TLS) port of the HTTP server")
	f.Int32Var(&o.ReadOnlyPort, "read-only-port", o.ReadOnlyPort, "unauthenticated read-only port (0: off)")
	f.Int32Var(&o.HealthzPort, "healthz-port", o.HealthzPort, "port of the plain-HTTP healthz endpoint, /healthz only (0: off)")
	f.StringVar(&o.HealthzBindAddress, "healthz-bind-address", o.HealthzBindAddress,
		"IP address the healthz port listens on (0.0.0.0 or :: for every interface)")
	f.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "serving certificate (default: self-signed, generated in --root-dir)")
	f.StringVar(&o.TLSKeyFile, "tls-private-key-file", o.TLSKeyFile, "serving key")
	f.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "CA bundle that authenticates client certificates")
	f.StringVar(&o.AuthorizationMode, "authorization-mode", o.AuthorizationMode, "Webhook (SubjectAccessReview) or AlwaysAllow")
	f.StringSliceVar(&o.ClusterDNS, "cluster-dns", o.ClusterDNS, "cluster DNS server IPs for ClusterFirst pods")
	f.StringVar(&o.ClusterDomain, "cluster-domain", o.ClusterDomain, "the cluster's DNS domain")
	f.StringVar(&o.ResolvConf, "resolv-conf", o.ResolvConf, "host resolver configuration for Default DNS pods")
	f.StringSliceVar(&o.AllowedUnsafeSysctls, "allowed-unsafe-sysctls", o.AllowedUnsafeSysctls,
		"unsafe sysctls (names, or prefixes ending in '*') pods may set beyond the safe ones")
	f.BoolVar(&o.SeccompDefault, "seccomp-default", o.SeccompDefault,
		"use the runtime's default seccomp profile (RuntimeDefault) for containers that set none, instead of Unconfined")
	f.BoolVar(&o.RuntimeEvents, "runtime-events", o.RuntimeEvents,
		"take the runtime's container events when it offers them (relisting every 5m as a safety net); false relists every second only, as the kubelet with EventedPLEG off")
	f.BoolVar(&o.SerializeImagePulls, "serialize-image-pulls", o.SerializeImagePulls, "pull one image at a time; false lets up to --max-parallel-image-pulls run at once")
	f.Int32Var(&o.MaxParallelImagePulls, "max-parallel-image-pulls", o.MaxParallelImagePulls, "most image pulls at once with --serialize-image-pulls=false (0: no limit)")
	addCgroupFlags(f, &o.Cgroups)
	addCPUManagerFlags(f, &o.CPUManager)
	addMemoryManagerFlags(f, &o.MemoryManager)
	f.Int32Var(&o.APIQPS, "kube-api-qps", o.APIQPS, "queries per second to the apiserver")
	f.Int32Var(&o.APIBurst, "kube-api-burst", o.APIBurst, "burst of queries to the apiserver")
	f.Int32Var(&o.EventQPS, "event-qps", o.EventQPS, "events written per second, through a client of their own (0: no limit)")
	f.Int32Var(&o.EventBurst, "event-burst", o.EventBurst, "burst of events written (with --event-qps > 0)")
	f.IntVar(&o.Verbosity, "v", o.Verbosity, "log verbosity (0: info, 4 and more: debug)")
	f.BoolVar(&o.RegisterNode, "register-node", o.RegisterNode, "create the node object; false waits for an administrator to create it, then writes only its status and lease")
	f.StringToStringVar(&o.NodeLabels, "node-labels", o.NodeLabels, "labels to add when registering the node (key=value,…); kubernetes.io and k8s.io keys only with the prefixes NodeRestriction allows")
	f.StringSliceVar(&o.RegisterWithTaints, "register-with-taints", o.RegisterWithTaints, "taints of the node at registration (<key>[=<value>]:<effect>,…)")
	f.BoolVar(&o.RegisterSchedulable, "register-schedulable", o.RegisterSchedulable, "register the node schedulable; false registers it cordoned (spec.unschedulable and the node.kubernetes.io/unschedulable:NoSchedule taint)")
	f.Int32Var(&o.NodeStatusMaxImages, "node-status-max-images", o.NodeStatusMaxImages, "most images reported in the node status, the largest first (-1: no cap)")
	f.StringVar(&o.ManifestURL, "manifest-url", o.ManifestURL, "URL of static pod manifests (one pod, a PodList or several YAML documents), fetched every --http-check-frequency")
	f.Var(&headerFlag{&o.ManifestURLHeader}, "manifest-url-header",
		"HTTP headers of the --manifest-url requests, comma-separated Name:value pairs; may be repeated, a name given twice sends both values (e.g. --manifest-url-header 'Authorization:Bearer t')")
	f.DurationVar(&o.HTTPCheckFrequency, "http-check-frequency", o.HTTPCheckFrequency, "how often --manifest-url is fetched")
	f.BoolVar(&o.RunOnce, "runonce", o.RunOnce, "start the static pods of --pod-manifest-path and --manifest-url, wait until they run, print their status and exit (no apiserver, no HTTP server); containers are left running")
	f.DurationVar(&o.RunOnceTimeout, "runonce-timeout", o.RunOnceTimeout, "how long --runonce waits for the pods to run")
	f.DurationVar(&o.ShutdownGracePeriod, "shutdown-grace-period", o.ShutdownGracePeriod,
		"graceful node shutdown: how long the node's shutdown is delayed (systemd-logind inhibitor lock) while pods stop (0: off)")
	f.DurationVar(&o.ShutdownGracePeriodCriticalPods, "shutdown-grace-period-critical-pods", o.ShutdownGracePeriodCriticalPods,
		"the part of --shutdown-grace-period kept for critical pods, stopped after the others")
	f.Var(&evictionFlag{&o.EvictionHard, "<"}, "eviction-hard",
		"hard eviction thresholds, e.g. memory.available<100Mi,nodefs.available<10% (default: the kubelet's)")
	f.Var(&evictionFlag{&o.EvictionSoft, "<"}, "eviction-soft", "soft eviction thresholds, e.g. memory.available<1Gi")
	f.Var(&evictionFlag{&o.EvictionSoftGracePeriod, "="}, "eviction-soft-grace-period",
		"grace period of each soft threshold, e.g. memory.available=1m30s")
	f.Var(&evictionFlag{&o.EvictionMinimumReclaim, "="}, "eviction-minimum-reclaim",
		"minimum reclaim past each threshold, e.g. memory.available=0Mi,nodefs.available=500Mi")
	f.Int32Var(&o.EvictionMaxPodGracePeriod, "eviction-max-pod-grace-period", o.EvictionMaxPodGracePeriod,
		"grace period (seconds) of a pod evicted for a soft threshold, or the pod's own when shorter")
	f.DurationVar(&o.EvictionPressureTransitionPeriod, "eviction-pressure-transition-period", o.EvictionPressureTransitionPeriod,
		"how long a pressure condition stays after its signal cleared")
	addGCFlags(f, &o.GC)
	return cmd
}

// addGCFlags adds the image garbage collection and log rotation flags
// the kubelet has (imageMaximumGCAge, containerLogMaxWorkers and
// containerLogMonitorInterval are configuration fields only, as there).
func addGCFlags(f *pflag.FlagSet, g *daemon.GCOptions) {
	f.Int32Var(&g.ImageGCHighThresholdPercent, "image-gc-high-threshold", g.ImageGCHighThresholdPercent,
		"image filesystem usage (percent) from which image garbage collection runs; 100 turns it off")
	f.Int32Var(&g.ImageGCLowThresholdPercent, "image-gc-low-threshold", g.ImageGCLowThresholdPercent,
		"image filesystem usage (percent) image garbage collection frees down to")
	f.DurationVar(&g.ImageMinimumGCAge, "minimum-image-ttl-duration", g.ImageMinimumGCAge, "minimum age of an unused image before it is garbage collected")
	f.StringVar(&g.PodInfraContainerImage, "pod-infra-container-image", g.PodInfraContainerImage,
		"the runtime's sandbox image, never garbage collected (for runtimes that do not pin it, such as containerd 1.6)")
	f.StringVar(&g.ContainerLogMaxSize, "container-log-max-size", g.ContainerLogMaxSize, "size at which a container's log is rotated, e.g. 10Mi")
	f.Int32Var(&g.ContainerLogMaxFiles, "container-log-max-files", g.ContainerLogMaxFiles, "most log files of a container, the current one included (at least 2)")
}

// evictionFlag is a map flag of "signal<value" or "signal=value" pairs.
type evictionFlag struct {
	m   *map[string]string
	sep string
}

func (e *evictionFlag) String() string {
	if e.m == nil || *e.m == nil {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(*e.m)) {
		parts = append(parts, k+e.sep+(*e.m)[k])
	}
	return strings.Join(parts, ",")
}

func (e *evictionFlag) Set(v string) error {
	m, err := daemon.ParseEvictionMap(v, e.sep)
	if err != nil {
		return err
	}
	*e.m = m
	return nil
}

func (e *evictionFlag) Type() string { return "mapStringString" }

// headerFlag is a repeatable flag of comma-separated Name:value headers.
type headerFlag struct{ m *map[string][]string }

func (h *headerFlag) String() string {
	if h.m == nil || *h.m == nil {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(*h.m)) {
		for _, v := range (*h.m)[k] {
			parts = append(parts, k+":"+v)
		}
	}
	return strings.Join(parts, ",")
}

func (h *headerFlag) Set(v string) error {
	if *h.m == nil {
		*h.m = map[string][]string{}
	}
	return daemon.ParseURLHeaders(v, *h.m)
}

func (h *headerFlag) Type() string { return "colonSeparatedMultimapStringString" }

// resolveNodeOptions merges the config file under the flags and validates.
func resolveNodeOptions(f *pflag.FlagSet, o *daemon.Options) error {
	f.Visit(func(fl *pflag.Flag) { o.SetOrigin(fl.Name, "--"+fl.Name) })
	if o.ConfigFile != "" {
		cf, err := daemon.LoadConfigFile(o.ConfigFile)
		if err != nil {
			return err
		}
		cf.Apply(o, f.Changed)
		if len(cf.Ignored) > 0 {
			fmt.Fprintf(os.Stderr, "lockstep: config file %s: ignoring fields lockstep does not support: %v\n", o.ConfigFile, cf.Ignored)
		}
	}
	return o.Validate()
}

// newLogger returns a structured text logger at the verbosity asked for.
func newLogger(v int) *slog.Logger {
	level := slog.LevelInfo
	if v >= 4 {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// fakeNetwork is how the in-process fake runtime's pod network is served
// (--fake-pod-network, --fake-host-network-address).
type fakeNetwork struct {
	PodNetwork, HostAddress string
}

// config applies the pod network to cfg.
func (n fakeNetwork) config(cfg *fakecri.Config) error {
	var err error
	if cfg.LoopbackCIDR, cfg.NodeAddress, err = fakecri.ParseNetwork(n.PodNetwork, n.HostAddress); err != nil {
		return fmt.Errorf("--fake-pod-network %q --fake-host-network-address %q: %w", n.PodNetwork, n.HostAddress, err)
	}
	return nil
}

// runNode picks the runtime — the in-process fake on the real clock, its
// pod network served as fake says, or a CRI runtime over gRPC — and runs
// the daemon until ctx ends.
func runNode(ctx context.Context, o daemon.Options, fake fakeNetwork, log *slog.Logger) error {
	var rt daemon.Runtime
	if o.RuntimeEndpoint == daemon.FakeRuntime {
		var err error
		if rt, err = fakeRuntime(log, &o, fake); err != nil {
			return err
		}
	} else {
		var err error
		if rt, err = daemon.DialRuntime(ctx, o); err != nil {
			return err
		}
	}
	defer rt.Close()
	if o.RunOnce {
		return daemon.RunOnce(ctx, o, rt, log, os.Stdout)
	}
	return daemon.Run(ctx, o, rt, log)
}

// fakeRuntime starts the in-process fake runtime, its streaming server
// and, unless net is off, its pod network (fakecri/podnet: the real
// prober reaches the containers' scripted endpoints); nothing really
// runs, so pod cgroups are turned off in o.
func fakeRuntime(log *slog.Logger, o *daemon.Options, net fakeNetwork) (daemon.Runtime, error) {
	var cfg fakecri.Config
	if err := net.config(&cfg); err != nil {
		return daemon.Runtime{}, err
	}
	fake := fakecri.New(cfg)
	streams, err := streamserver.Start(fake, "127.0.0.1:0")
	if err != nil {
		return daemon.Runtime{}, err
	}
	stop := func() { _ = streams.Stop() }
	podNetwork := "off (probes find nothing)"
	if cfg.LoopbackCIDR.IsValid() {
		pods := podnet.Start(fake, log)
		stop = func() { pods.Stop(); _ = streams.Stop() }
		podNetwork = cfg.LoopbackCIDR.String() + " on loopback"
	}
	log.Info("using the in-process fake runtime (nothing really runs, so no pod cgroups either)", "streams", "http://"+streams.Addr().String(), "podNetwork", podNetwork)
	o.Cgroups.CgroupsPerQOS, o.Cgroups.EnforceNodeAllocatable = false, nil
	return daemon.Runtime{Runtime: fake, Images: fake, Type: "fakecri", Close: stop}, nil
}

// refuseRegressionBuild keeps a binary built with a regression-variant tag
// (an upstream bug re-created on purpose, for the simulation suite's own
// tests) from ever running as a node.
func refuseRegressionBuild(tags []string) error {
	if len(tags) == 0 {
		return nil
	}
	return fmt.Errorf("this lockstep was built with -tags %s, a deliberately broken agent for the simulation suite's tests (make regress); it runs `lockstep sim` only: build without the tag to run a node", strings.Join(tags, ","))
}
