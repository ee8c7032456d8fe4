// Package daemon turns the agent into the node daemon an operator runs:
// its options (kubelet-named flags and a KubeletConfiguration file, flags
// winning), their validation, and the wiring of the real world — the CRI
// gRPC client, client-go, /proc, the OS file system, the HTTP server and
// the metrics — around the agent. cmd/lockstep's `node` command calls it.
package daemon

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/eviction"
)

// FakeRuntime is the runtime endpoint value that runs the in-process fake
// runtime on the real clock (the demo).
const FakeRuntime = "fake"

// Options is everything the daemon can be told. Each field has a flag
// (named like the kubelet's) and, where the kubelet has one, a field of the
// KubeletConfiguration file.
type Options struct {
	Kubeconfig string
	// BootstrapKubeconfig holds the credentials (a bootstrap token) a node
	// requests its client certificate with when Kubeconfig is missing or
	// its certificate has expired (TLS bootstrap).
	BootstrapKubeconfig string
	// CertDir keeps the certificates the node is issued
	// (kubelet-client-current.pem, kubelet-server-current.pem) and the
	// self-signed serving one; empty means <RootDir>/pki.
	CertDir string
	// RotateCertificates renews the client certificate through CSRs
	// before it expires (config field rotateCertificates).
	RotateCertificates bool
	// RotateServerCertificates requests the serving certificate from the
	// kubelet-serving signer and renews it (config field
	// serverTLSBootstrap) instead of a self-signed one.
	RotateServerCertificates bool
	ConfigFile               string
	NodeName                 string
	NodeIP                   string
	RuntimeEndpoint          string
	ImageEndpoint            string
	ManifestPath             string
	RootDir                  string
	PodLogsRoot              string
	ContainerLogsDir         string
	// Dead container garbage collection (runtimesync.GCPolicy).
	MinimumContainerTTLDuration   time.Duration
	MaxDeadContainersPerContainer int32
	MaxDeadContainers             int32
	MaxPods                       int32
	SyncFrequency                 time.Duration
	FileCheckFrequency            time.Duration
	NodeStatusUpdateFrequency     time.Duration
	NodeStatusReportFrequency     time.Duration
	NodeLeaseDurationSeconds      int32
	RuntimeRequestTimeout         time.Duration
	Address                       string
	Port                          int32
	ReadOnlyPort                  int32
	// HealthzBindAddress and HealthzPort are where the plain-HTTP healthz
	// port listens (--healthz-bind-address, --healthz-port; config fields
	// healthzBindAddress, healthzPort): 127.0.0.1:10248 by default, as the
	// kubelet's; port 0 turns it off.
	HealthzBindAddress string
	HealthzPort        int32
	TLSCertFile        string
	TLSKeyFile         string
	ClientCAFile       string
	AuthorizationMode  string
	// EnableProfilingHandler serves /debug/pprof on the secure port
	// (config field enableProfilingHandler; default true, as the kubelet).
	EnableProfilingHandler bool
	ClusterDNS             []string
	ClusterDomain          string
	ResolvConf             string
	AllowedUnsafeSysctls   []string
	// SeccompDefault makes RuntimeDefault the seccomp profile of
	// containers that name none.
	SeccompDefault bool
	// RuntimeEvents takes the runtime's container events
	// (GetContainerEvents) when it offers them, relisting every 5 min as a
	// safety net (the evented PLEG); false relists every second only, as
	// the kubelet does with EventedPLEG off, its default. Default true.
	RuntimeEvents bool
	// SingleProcessOOMKill (cgroup v2) keeps the kernel's single-process
	// OOM kill instead of killing the whole container; nil is false on
	// cgroup v2 and true, the only choice, on cgroup v1.
	SingleProcessOOMKill *bool
	// SerializeImagePulls pulls one image at a time; false lets
	// MaxParallelImagePulls pulls run at once (0: no limit).
	SerializeImagePulls   bool
	MaxParallelImagePulls int32
	APIQPS                int32
	APIBurst              int32
	// EventQPS and EventBurst limit the event client (eventRecordQPS,
	// eventBurst); EventQPS 0 means no limit, as the kubelet's.
	EventQPS   int32
	EventBurst int32
	Verbosity  int
	// RegisterNode: the agent creates its Node (--register-node); false
	// waits for an administrator to create it.
	RegisterNode bool
	// NodeLabels are added to the Node at registration (--node-labels).
	NodeLabels map[string]string
	// RegisterWithTaints are the Node's taints at registration, each
	// "<key>[=<value>]:<effect>" (--register-with-taints).
	RegisterWithTaints []string
	// RegisterSchedulable: false registers the Node cordoned
	// (spec.unschedulable and the node.kubernetes.io/unschedulable
	// NoSchedule taint), --register-schedulable.
	RegisterSchedulable bool
	// NodeStatusMaxImages caps status.images, the largest first
	// (nodeStatusMaxImages; default 50, -1: no cap).
	NodeStatusMaxImages int32
	// ManifestURL is the HTTP static pod source (--manifest-url,
	// staticPodURL), polled every HTTPCheckFrequency; ManifestURLHeader
	// are the headers of its requests (--manifest-url-header,
	// staticPodURLHeader).
	ManifestURL        string
	ManifestURLHeader  map[string][]string
	HTTPCheckFrequency time.Duration
	// RunOnce starts the static pods, waits until they run, prints their
	// status and exits (--runonce): no apiserver, no HTTP server.
	RunOnce bool
	// RunOnceTimeout bounds the wait of RunOnce.
	RunOnceTimeout time.Duration
	// Graceful node shutdown: the time the node's shutdown is delayed for
	// the pods (shutdownGracePeriod), the part of it kept for critical pods
	// (shutdownGracePeriodCriticalPods), or per priority
	// (shutdownGracePeriodByPodPriority, instead of both). Zero: off.
	ShutdownGracePeriod              time.Duration
	ShutdownGracePeriodCriticalPods  time.Duration
	ShutdownGracePeriodByPodPriority []ShutdownGroup
	// EnableSystemLogHandler serves /var/log at /logs/ on the secure port.
	EnableSystemLogHandler bool
	// Cgroups are the pod and QoS cgroup options.
	Cgroups CgroupOptions
	// CPUManager are the CPU manager's options.
	CPUManager CPUManagerOptions
	// MemoryManager are the memory and topology managers' options.
	MemoryManager MemoryManagerOptions
	// Eviction (eviction.ParseThresholds): maps from signal to threshold
	// ("100Mi", "10%"), grace period ("1m30s") or minimum reclaim; a nil
	// EvictionHard means the kubelet's defaults.
	EvictionHard                     map[string]string
	EvictionSoft                     map[string]string
	EvictionSoftGracePeriod          map[string]string
	EvictionMinimumReclaim           map[string]string
	EvictionMaxPodGracePeriod        int32
	EvictionPressureTransitionPeriod time.Duration
	// GC are the image garbage collection and log rotation options.
	GC GCOptions

	// origin says where each option's value came from, by option key:
	// "--flag" or "field <name> in <file>"; absent means the default.
	origin map[string]string
}

// Defaults returns the options a daemon runs with when told nothing: the
// kubelet's defaults where lockstep shares its meaning.
func Defaults() Options {
	return Options{
		RuntimeEndpoint:                  "unix:///run/containerd/containerd.sock",
		RuntimeEvents:                    true,
		RootDir:                          "/var/lib/lockstep",
		PodLogsRoot:                      "/var/log/pods",
		ContainerLogsDir:                 "/var/log/containers",
		MaxDeadContainersPerContainer:    1,
		MaxDeadContainers:                -1,
		MaxPods:                          110,
		SyncFrequency:                    time.Minute,
		FileCheckFrequency:               20 * time.Second,
		NodeStatusUpdateFrequency:        10 * time.Second,
		NodeStatusReportFrequency:        5 * time.Minute,
		NodeLeaseDurationSeconds:         40,
		RuntimeRequestTimeout:            2 * time.Minute,
		Address:                          "0.0.0.0",
		Port:                             10250,
		ReadOnlyPort:                     0,
		HealthzBindAddress:               "127.0.0.1",
		HealthzPort:                      10248,
		AuthorizationMode:                "Webhook",
		EnableProfilingHandler:           true,
		ClusterDomain:                    "cluster.local",
		ResolvConf:                       "/etc/resolv.conf",
		SerializeImagePulls:              true,
		APIQPS:                           50,
		APIBurst:                         100,
		EventQPS:                         50,
		EventBurst:                       100,
		Cgroups:                          DefaultCgroupOptions(),
		CPUManager:                       DefaultCPUManagerOptions(),
		MemoryManager:                    DefaultMemoryManagerOptions(),
		RegisterNode:                     true,
		RegisterSchedulable:              true,
		NodeStatusMaxImages:              50,
		HTTPCheckFrequency:               20 * time.Second,
		RunOnceTimeout:                   5 * time.Minute,
		EnableSystemLogHandler:           true,
		EvictionPressureTransitionPeriod: 5 * time.Minute,
		GC:                               DefaultGCOptions(),
		origin:                           map[string]string{},
	}
}

// SetOrigin records where option key's value came from.
func (o *Options) SetOrigin(key, origin string) {
	if o.origin == nil {
		o.origin = map[string]string{}
	}
	o.origin[key] = origin
}

// describe names an option's value and its source for an error message.
func (o *Options) describe(key string, value any) string {
	if src, ok := o.origin[key]; ok {
		if strings.HasPrefix(src, "--") {
			return fmt.Sprintf("%s=%v", src, value)
		}
		return fmt.Sprintf("%s (%v)", src, value)
	}
	return fmt.Sprintf("default %s=%v", key, value)
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// badOption makes the error of one invalid option.
type badOption func(key string, value any, rule string) error

// Validate checks every option and returns one error line naming the flag
// or config field, its value and the allowed range (the first invalid
// option, in the order below).
func (o *Options) Validate() error {
	bad := func(key string, value any, rule string) error {
		return fmt.Errorf("invalid %s: %s", o.describe(key, value), rule)
	}
	checks := []func(badOption) error{
		o.validateNumbers, o.validateNamesAndPaths, o.validateModes, o.validateEviction,
		o.validateGC, o.validateCgroups, o.validateCPUManager, o.validateMemoryManager,
		o.validateNode, o.validateEndpoints,
	}
	for _, check := range checks {
		if err := check(bad); err != nil {
			return err
		}
	}
	return nil
}

// validateNumbers checks the durations, counts, ports, rates and the
// verbosity.
func (o *Options) validateNumbers(bad badOption) error {
	positive := []struct {
		key string
		d   time.Duration
	}{
		{"sync-frequency", o.SyncFrequency}, {"file-check-frequency", o.FileCheckFrequency},
		{"node-status-update-frequency", o.NodeStatusUpdateFrequency},
		{"node-status-report-frequency", o.NodeStatusReportFrequency},
		{"runtime-request-timeout", o.RuntimeRequestTimeout},
		{"http-check-frequency", o.HTTPCheckFrequency}, {"runonce-timeout", o.RunOnceTimeout},
	}
	for _, p := range positive {
		if p.d <= 0 {
			return bad(p.key, p.d, "must be a positive duration such as 10s")
		}
	}
	switch {
	case o.MaxPods < 1 || o.MaxPods > 10000:
		return bad("max-pods", o.MaxPods, "must be between 1 and 10000")
	case o.NodeLeaseDurationSeconds < 1:
		return bad("node-lease-duration-seconds", o.NodeLeaseDurationSeconds, "must be at least 1")
	case o.Port < 1 || o.Port > 65535:
		return bad("port", o.Port, "must be between 1 and 65535")
	case o.ReadOnlyPort < 0 || o.ReadOnlyPort > 65535:
		return bad("read-only-port", o.ReadOnlyPort, "must be between 0 (off) and 65535")
	case o.ReadOnlyPort != 0 && o.ReadOnlyPort == o.Port:
		return bad("read-only-port", o.ReadOnlyPort, "must differ from --port")
	case o.HealthzPort < 0 || o.HealthzPort > 65535:
		return bad("healthz-port", o.HealthzPort, "must be between 0 (off) and 65535")
	case o.HealthzPort != 0 && (o.HealthzPort == o.Port || o.HealthzPort == o.ReadOnlyPort):
		return bad("healthz-port", o.HealthzPort, "must differ from --port and --read-only-port")
	case o.MaxParallelImagePulls < 0:
		return bad("max-parallel-image-pulls", o.MaxParallelImagePulls, "must be a positive number (0: unset)")
	case o.SerializeImagePulls && o.MaxParallelImagePulls > 1:
		return bad("max-parallel-image-pulls", o.MaxParallelImagePulls, "cannot be larger than 1 unless --serialize-image-pulls=false")
	case o.APIQPS < 0:
		return bad("kube-api-qps", o.APIQPS, "must be 0 or more")
	case o.APIBurst < 0:
		return bad("kube-api-burst", o.APIBurst, "must be 0 or more")
	case o.EventQPS < 0:
		return bad("event-qps", o.EventQPS, "must be 0 or more")
	case o.EventBurst < 0:
		return bad("event-burst", o.EventBurst, "must be 0 or more")
	case o.Verbosity < 0 || o.Verbosity > 10:
		return bad("v", o.Verbosity, "must be between 0 and 10")
	}
	return nil
}

// validateNamesAndPaths checks the addresses, names, paths, certificate
// options and the authorization mode.
func (o *Options) validateNamesAndPaths(bad badOption) error {
	switch {
	case net.ParseIP(o.Address) == nil:
		return bad("address", o.Address, "must be an IP address such as 0.0.0.0 or 127.0.0.1")
	case net.ParseIP(o.HealthzBindAddress) == nil:
		return bad("healthz-bind-address", o.HealthzBindAddress, "must be an IP address such as 127.0.0.1, 0.0.0.0 or ::")
	case o.NodeName != "" && (len(o.NodeName) > 253 || !dns1123.MatchString(o.NodeName)):
		return bad("hostname-override", o.NodeName, "must be a lowercase DNS name (a-z, 0-9, '-', '.')")
	case !filepath.IsAbs(o.RootDir):
		return bad("root-dir", o.RootDir, "must be an absolute path")
	case o.CertDir != "" && !filepath.IsAbs(o.CertDir):
		return bad("cert-dir", o.CertDir, "must be an absolute path")
	case o.BootstrapKubeconfig != "" && o.Kubeconfig == "":
		return bad("bootstrap-kubeconfig", o.BootstrapKubeconfig, "needs --kubeconfig (where the kubeconfig the bootstrap makes is written)")
	case o.RotateCertificates && o.Kubeconfig == "":
		return bad("rotate-certificates", o.RotateCertificates, "needs --kubeconfig (standalone mode has no apiserver to ask)")
	case o.RotateServerCertificates && o.Kubeconfig == "":
		return bad("rotate-server-certificates", o.RotateServerCertificates, "needs --kubeconfig (standalone mode has no apiserver to ask)")
	case o.RotateServerCertificates && o.TLSCertFile != "":
		return bad("rotate-server-certificates", o.RotateServerCertificates, "cannot be used with --tls-cert-file (the serving certificate comes from a CSR)")
	case !filepath.IsAbs(o.PodLogsRoot):
		return bad("pod-logs-dir", o.PodLogsRoot, "must be an absolute path")
	case !filepath.IsAbs(o.ContainerLogsDir):
		return bad("container-logs-dir", o.ContainerLogsDir, "must be an absolute path")
	case o.MinimumContainerTTLDuration < 0:
		return bad("minimum-container-ttl-duration", o.MinimumContainerTTLDuration, "must be 0 or more")
	case o.ManifestPath != "" && !filepath.IsAbs(o.ManifestPath):
		return bad("pod-manifest-path", o.ManifestPath, "must be an absolute path")
	case !slices.Contains([]string{"Webhook", "AlwaysAllow"}, o.AuthorizationMode):
		return bad("authorization-mode", o.AuthorizationMode, "must be Webhook or AlwaysAllow")
	case o.AuthorizationMode == "Webhook" && o.Kubeconfig == "" && o.origin["authorization-mode"] != "":
		return bad("authorization-mode", o.AuthorizationMode, "Webhook needs --kubeconfig (standalone mode has no apiserver to ask)")
	}
	return nil
}

// validateEviction checks the eviction options and the allowed unsafe
// sysctls (what admission and eviction decide with).
func (o *Options) validateEviction(bad badOption) error {
	if _, err := o.EvictionThresholds(); err != nil {
		return bad("eviction-hard", o.EvictionHard, err.Error())
	}
	if o.EvictionMaxPodGracePeriod < 0 {
		return bad("eviction-max-pod-grace-period", o.EvictionMaxPodGracePeriod, "must be 0 or more")
	}
	if o.EvictionPressureTransitionPeriod <= 0 {
		return bad("eviction-pressure-transition-period", o.EvictionPressureTransitionPeriod, "must be a positive duration such as 5m")
	}
	if _, err := admission.NewSysctlAllowlist(o.AllowedUnsafeSysctls); err != nil {
		return bad("allowed-unsafe-sysctls", o.AllowedUnsafeSysctls, err.Error())
	}
	return nil
}

// validateNode checks what the node registers with: labels, taints and
// addresses.
func (o *Options) validateNode(bad badOption) error {
	if err := ValidateNodeLabels(o.NodeLabels); err != nil {
		return bad("node-labels", o.NodeLabels, err.Error())
	}
	if _, err := ParseTaints(o.RegisterWithTaints); err != nil {
		return bad("register-with-taints", strings.Join(o.RegisterWithTaints, ","), err.Error())
	}
	if _, err := ParseNodeIPs(o.NodeIP); err != nil {
		return bad("node-ip", o.NodeIP, err.Error())
	}
	return nil
}

// validateEndpoints checks the runtime and image endpoints and the
// cluster DNS addresses.
func (o *Options) validateEndpoints(bad badOption) error {
	if err := validEndpoint(o.RuntimeEndpoint, true); err != nil {
		return bad("container-runtime-endpoint", o.RuntimeEndpoint, err.Error())
	}
	if o.ImageEndpoint != "" {
		if err := validEndpoint(o.ImageEndpoint, false); err != nil {
			return bad("image-service-endpoint", o.ImageEndpoint, err.Error())
		}
	}
	for _, ip := range o.ClusterDNS {
		if net.ParseIP(ip) == nil {
			return bad("cluster-dns", strings.Join(o.ClusterDNS, ","), fmt.Sprintf("%q is not an IP address", ip))
		}
	}
	return nil
}

func validEndpoint(ep string, fakeOK bool) error {
	switch {
	case ep == FakeRuntime && fakeOK:
		return nil
	case strings.HasPrefix(ep, "unix:///"), strings.HasPrefix(ep, "/"):
		return nil
	}
	if fakeOK {
		return fmt.Errorf("must be a unix socket (unix:///path or /path) or %q", FakeRuntime)
	}
	return fmt.Errorf("must be a unix socket (unix:///path or /path)")
}

// CertDirectory is where the node's certificates are kept: CertDir, or
// <RootDir>/pki.
func (o *Options) CertDirectory() string {
	if o.CertDir != "" {
		return o.CertDir
	}
	return filepath.Join(o.RootDir, "pki")
}

// ParallelImagePulls is the images.Config.ParallelPulls the options ask
// for: 1 when pulls are serialized, else MaxParallelImagePulls, or -1 (no
// limit) when it is unset.
func (o *Options) ParallelImagePulls() int {
	switch {
	case o.SerializeImagePulls:
		return 1
	case o.MaxParallelImagePulls > 0:
		return int(o.MaxParallelImagePulls)
	}
	return -1
}

// EvictionThresholds parses the eviction options into thresholds (an
// allocatableMemory.available threshold follows memory.available's, as
// with the kubelet's default enforceNodeAllocatable: pods).
func (o *Options) EvictionThresholds() ([]eviction.Threshold, error) {
	return eviction.ParseThresholds(o.EvictionHard, o.EvictionSoft, o.EvictionSoftGracePeriod, o.EvictionMinimumReclaim, true)
}

// ParseEvictionMap reads an eviction flag: comma-separated
// "signal<value" (--eviction-hard, --eviction-soft) or "signal=value"
// (--eviction-soft-grace-period, --eviction-minimum-reclaim) pairs.
func ParseEvictionMap(s, sep string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, sep)
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%q: want signal%svalue", kv, sep)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}
