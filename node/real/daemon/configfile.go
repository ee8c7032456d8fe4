package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// supportedFields are the KubeletConfiguration fields lockstep honours (a
// dotted path for nested ones). Any other field present in a file is
// reported once as ignored.
var supportedFields = []string{
	"apiVersion", "kind", "staticPodPath", "podLogsDir", "syncFrequency", "fileCheckFrequency", "address", "port",
	"readOnlyPort", "healthzPort", "healthzBindAddress", "tlsCertFile", "tlsPrivateKeyFile", "authentication.x509.clientCAFile",
	"authentication.webhook.enabled", "authentication.anonymous.enabled", "authorization.mode",
	"enableProfilingHandler",
	"clusterDomain", "clusterDNS", "resolvConf", "runtimeRequestTimeout", "maxPods",
	"nodeStatusUpdateFrequency", "nodeStatusReportFrequency", "nodeLeaseDurationSeconds",
	"kubeAPIQPS", "kubeAPIBurst", "eventRecordQPS", "eventBurst", "containerRuntimeEndpoint", "imageServiceEndpoint", "logging.verbosity",
	"seccompDefault", "singleProcessOOMKill",
	"serializeImagePulls", "maxParallelImagePulls",
	"cgroupsPerQOS", "cgroupRoot", "cgroupDriver", "kubeReserved", "systemReserved", "enforceNodeAllocatable", "qosReserved",
	"cpuManagerPolicy", "cpuManagerPolicyOptions", "cpuManagerReconcilePeriod", "reservedSystemCPUs",
	"memoryManagerPolicy", "reservedMemory", "topologyManagerPolicy", "topologyManagerScope",
	"registerNode", "registerWithTaints", "enableSystemLogHandler",
	"evictionHard", "evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim", "evictionMaxPodGracePeriod",
	"evictionPressureTransitionPeriod",
	"staticPodURL", "staticPodURLHeader", "httpCheckFrequency", "nodeStatusMaxImages",
	"shutdownGracePeriod", "shutdownGracePeriodCriticalPods", "shutdownGracePeriodByPodPriority",
	"rotateCertificates", "serverTLSBootstrap",
	"imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "imageMinimumGCAge", "imageMaximumGCAge",
	"containerLogMaxSize", "containerLogMaxFiles", "containerLogMaxWorkers", "containerLogMonitorInterval",
}

// ConfigFile is a parsed KubeletConfiguration and the fields it set that
// lockstep ignores.
type ConfigFile struct {
	Path    string
	Config  kubeletv1beta1.KubeletConfiguration
	Set     map[string]bool
	Ignored []string
}

// LoadConfigFile reads a KubeletConfiguration (YAML or JSON) strictly: an
// unknown field is an error naming it.
func LoadConfigFile(path string) (*ConfigFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	return ParseConfigFile(path, data)
}

// ParseConfigFile parses the content of the config file at path.
func ParseConfigFile(path string, data []byte) (*ConfigFile, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("config file %s is not valid YAML or JSON: %w", path, err)
	}
	cf := &ConfigFile{Path: path, Set: map[string]bool{}}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cf.Config); err != nil {
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			return nil, fmt.Errorf("config file %s: unknown field %s", path, f)
		}
		return nil, fmt.Errorf("config file %s: %s", path, strings.TrimPrefix(msg, "json: "))
	}
	if cf.Config.Kind != "KubeletConfiguration" || cf.Config.APIVersion != "kubelet.config.k8s.io/v1beta1" {
		return nil, fmt.Errorf("config file %s: want kind KubeletConfiguration, apiVersion kubelet.config.k8s.io/v1beta1; got kind %q, apiVersion %q",
			path, cf.Config.Kind, cf.Config.APIVersion)
	}
	var raw map[string]any
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	collectPaths(raw, "", cf.Set)
	for p := range cf.Set {
		if !slices.Contains(supportedFields, p) && !slices.ContainsFunc(supportedFields, func(s string) bool { return strings.HasPrefix(s, p+".") }) {
			cf.Ignored = append(cf.Ignored, p)
		}
	}
	slices.Sort(cf.Ignored)
	return cf, nil
}

// collectPaths records the dotted path of every leaf (and of every object
// whose fields lockstep does not look into).
func collectPaths(m map[string]any, prefix string, out map[string]bool) {
	for k, v := range m {
		p := prefix + k
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 && slices.ContainsFunc(supportedFields, func(s string) bool { return strings.HasPrefix(s, p+".") }) {
			collectPaths(sub, p+".", out)
			continue
		}
		out[p] = true
	}
}

// Apply copies the file's settings into o, except those whose flag was
// given on the command line (flags win). It records where values came from.
func (cf *ConfigFile) Apply(o *Options, flagSet func(flag string) bool) {
	c := &cf.Config
	set := func(field, flag string, apply func()) {
		if cf.Set[field] && !flagSet(flag) {
			apply()
			o.SetOrigin(flag, fmt.Sprintf("field %s in %s", field, cf.Path))
		}
	}
	set("staticPodPath", "pod-manifest-path", func() { o.ManifestPath = c.StaticPodPath })
	set("podLogsDir", "pod-logs-dir", func() { o.PodLogsRoot = c.PodLogsDir })
	set("syncFrequency", "sync-frequency", func() { o.SyncFrequency = c.SyncFrequency.Duration })
	set("fileCheckFrequency", "file-check-frequency", func() { o.FileCheckFrequency = c.FileCheckFrequency.Duration })
	applyServing(c, o, set)
	applyPodDefaults(c, o, set)
	applyRuntimeAndAPI(c, o, set)
	applyCgroups(c, o, set)
	applyCPUManager(c, o, set)
	applyMemoryManager(c, o, set)
	applyNodeAndEviction(c, o, set)
	applyGC(c, o, set)
	if cf.Set["authentication.anonymous.enabled"] && c.Authentication.Anonymous.Enabled != nil && *c.Authentication.Anonymous.Enabled {
		cf.Ignored = append(cf.Ignored, "authentication.anonymous.enabled (anonymous access is always off)")
	}
	if cf.Set["authentication.webhook.enabled"] && c.Authentication.Webhook.Enabled != nil && !*c.Authentication.Webhook.Enabled {
		cf.Ignored = append(cf.Ignored, "authentication.webhook.enabled=false (token authentication is on whenever --kubeconfig is given)")
	}
}

// setter applies one config file field unless its flag was given.
type setter func(field, flag string, apply func())

// applyServing applies the server's settings: address, ports, TLS,
// certificates, authentication and authorization.
func applyServing(c *kubeletv1beta1.KubeletConfiguration, o *Options, set setter) {
	set("address", "address", func() { o.Address = c.Address })
	set("port", "port", func() { o.Port = c.Port })
	set("readOnlyPort", "read-only-port", func() { o.ReadOnlyPort = c.ReadOnlyPort })
	set("healthzPort", "healthz-port", func() {
		if c.HealthzPort != nil {
			o.HealthzPort = *c.HealthzPort
		}
	})
	set("healthzBindAddress", "healthz-bind-address", func() { o.HealthzBindAddress = c.HealthzBindAddress })
	set("tlsCertFile", "tls-cert-file", func() { o.TLSCertFile = c.TLSCertFile })
	set("tlsPrivateKeyFile", "tls-private-key-file", func() { o.TLSKeyFile = c.TLSPrivateKeyFile })
	set("rotateCertificates", "rotate-certificates", func() { o.RotateCertificates = c.RotateCertificates })
	set("serverTLSBootstrap", "rotate-server-certificates", func() { o.RotateServerCertificates = c.ServerTLSBootstrap })
	set("authentication.x509.clientCAFile", "client-ca-file", func() { o.ClientCAFile = c.Authentication.X509.ClientCAFile })
	set("authorization.mode", "authorization-mode", func() { o.AuthorizationMode = string(c.Authorization.Mode) })
	set("enableProfilingHandler", "enableProfilingHandler", func() {
		if c.EnableProfilingHandler != nil {
			o.EnableProfilingHandler = *c.EnableProfilingHandler
		}
	})
}

// applyPodDefaults applies what every pod gets from the node: DNS,
// sysctls, seccomp, OOM kill mode, the resolver file.
func applyPodDefaults(c *kubeletv1beta1.KubeletConfiguration, o *Options, set setter) {
	set("clusterDomain", "cluster-domain", func() { o.ClusterDomain = c.ClusterDomain })
	set("clusterDNS", "cluster-dns", func() { o.ClusterDNS = c.ClusterDNS })
	set("allowedUnsafeSysctls", "allowed-unsafe-sysctls", func() { o.AllowedUnsafeSysctls = c.AllowedUnsafeSysctls })
	set("seccompDefault", "seccomp-default", func() {
		if c.SeccompDefault != nil {
			o.SeccompDefault = *c.SeccompDefault
		}
	})
	set("singleProcessOOMKill", "single-process-oom-kill", func() { o.SingleProcessOOMKill = c.SingleProcessOOMKill })
	set("resolvConf", "resolv-conf", func() {
		if c.ResolverConfig != nil {
			o.ResolvConf = *c.ResolverConfig
		}
	})
}

// applyRuntimeAndAPI applies the runtime's timeout and endpoints, image
// pulls, the pod count, node status periods, the apiserver and event
// rates and the verbosity.
func applyRuntimeAndAPI(c *kubeletv1beta1.KubeletConfiguration, o *Options, set setter) {
	set("runtimeRequestTimeout", "runtime-request-timeout", func() { o.RuntimeRequestTimeout = c.RuntimeRequestTimeout.Duration })
	set("maxPods", "max-pods", func() { o.MaxPods = c.MaxPods })
	set("nodeStatusUpdateFrequency", "node-status-update-frequency", func() { o.NodeStatusUpdateFrequency = c.NodeStatusUpdateFrequency.Duration })
	set("nodeStatusReportFrequency", "node-status-report-frequency", func() { o.NodeStatusReportFrequency = c.NodeStatusReportFrequency.Duration })
	set("nodeLeaseDurationSeconds", "node-lease-duration-seconds", func() { o.NodeLeaseDurationSeconds = c.NodeLeaseDurationSeconds })
	set("kubeAPIQPS", "kube-api-qps", func() {
		if c.KubeAPIQPS != nil {
			o.APIQPS = *c.KubeAPIQPS
		}
	})
	set("kubeAPIBurst", "kube-api-burst", func() { o.APIBurst = c.KubeAPIBurst })
	set("eventRecordQPS", "event-qps", func() {
		if c.EventRecordQPS != nil {
			o.EventQPS = *c.EventRecordQPS
		}
	})
	set("eventBurst", "event-burst", func() { o.EventBurst = c.EventBurst })
	set("containerRuntimeEndpoint", "container-runtime-endpoint", func() { o.RuntimeEndpoint = c.ContainerRuntimeEndpoint })
	set("imageServiceEndpoint", "image-service-endpoint", func() { o.ImageEndpoint = c.ImageServiceEndpoint })
	set("serializeImagePulls", "serialize-image-pulls", func() {
		if c.SerializeImagePulls != nil {
			o.SerializeImagePulls = *c.SerializeImagePulls
		}
	})
	set("maxParallelImagePulls", "max-parallel-image-pulls", func() {
		if c.MaxParallelImagePulls != nil {
			o.MaxParallelImagePulls = *c.MaxParallelImagePulls
		}
	})
	set("logging.verbosity", "v", func() { o.Verbosity = int(c.Logging.Verbosity) })
}

// applyNodeAndEviction applies the node's registration, eviction, the
// HTTP static pod source, node status images and graceful shutdown.
func applyNodeAndEviction(c *kubeletv1beta1.KubeletConfiguration, o *Options, set setter) {
	set("registerNode", "register-node", func() { o.RegisterNode = c.RegisterNode == nil || *c.RegisterNode })
	set("registerWithTaints", "register-with-taints", func() {
		o.RegisterWithTaints = nil
		for _, t := range c.RegisterWithTaints {
			o.RegisterWithTaints = append(o.RegisterWithTaints, taintString(t))
		}
	})
	set("enableSystemLogHandler", "enable-system-log-handler", func() {
		o.EnableSystemLogHandler = c.EnableSystemLogHandler == nil || *c.EnableSystemLogHandler
	})
	set("evictionHard", "eviction-hard", func() { o.EvictionHard = c.EvictionHard })
	set("evictionSoft", "eviction-soft", func() { o.EvictionSoft = c.EvictionSoft })
	set("evictionSoftGracePeriod", "eviction-soft-grace-period", func() { o.EvictionSoftGracePeriod = c.EvictionSoftGracePeriod })
	set("evictionMinimumReclaim", "eviction-minimum-reclaim", func() { o.EvictionMinimumReclaim = c.EvictionMinimumReclaim })
	set("evictionMaxPodGracePeriod", "eviction-max-pod-grace-period", func() { o.EvictionMaxPodGracePeriod = c.EvictionMaxPodGracePeriod })
	set("evictionPressureTransitionPeriod", "eviction-pressure-transition-period", func() {
		o.EvictionPressureTransitionPeriod = c.EvictionPressureTransitionPeriod.Duration
	})
	set("staticPodURL", "manifest-url", func() { o.ManifestURL = c.StaticPodURL })
	set("staticPodURLHeader", "manifest-url-header", func() { o.ManifestURLHeader = c.StaticPodURLHeader })
	set("httpCheckFrequency", "http-check-frequency", func() { o.HTTPCheckFrequency = c.HTTPCheckFrequency.Duration })
	set("nodeStatusMaxImages", "node-status-max-images", func() {
		if c.NodeStatusMaxImages != nil {
			o.NodeStatusMaxImages = *c.NodeStatusMaxImages
		}
	})
	set("shutdownGracePeriod", "shutdown-grace-period", func() { o.ShutdownGracePeriod = c.ShutdownGracePeriod.Duration })
	set("shutdownGracePeriodCriticalPods", "shutdown-grace-period-critical-pods", func() {
		o.ShutdownGracePeriodCriticalPods = c.ShutdownGracePeriodCriticalPods.Duration
	})
	set("shutdownGracePeriodByPodPriority", "shutdown-grace-period-by-pod-priority", func() {
		o.ShutdownGracePeriodByPodPriority = nil
		for _, g := range c.ShutdownGracePeriodByPodPriority {
			o.ShutdownGracePeriodByPodPriority = append(o.ShutdownGracePeriodByPodPriority, ShutdownGroup{Priority: g.Priority, GracePeriodSeconds: g.ShutdownGracePeriodSeconds})
		}
	})
}
