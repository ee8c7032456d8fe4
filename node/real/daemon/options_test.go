package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestDefaultsAreValid(t *testing.T) {
	o := Defaults()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
}

func TestInvalidOptions(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"max pods zero flag", func(o *Options) { o.MaxPods = 0; o.SetOrigin("max-pods", "--max-pods") }, "invalid --max-pods=0: must be between 1 and 10000"},
		{"max pods from file", func(o *Options) { o.MaxPods = -3; o.SetOrigin("max-pods", "field maxPods in /etc/c.yaml") },
			"invalid field maxPods in /etc/c.yaml (-3): must be between 1 and 10000"},
		{"port", func(o *Options) { o.Port = 70000; o.SetOrigin("port", "--port") }, "invalid --port=70000: must be between 1 and 65535"},
		{"read-only port", func(o *Options) { o.ReadOnlyPort = -1; o.SetOrigin("read-only-port", "--read-only-port") }, "invalid --read-only-port=-1: must be between 0 (off) and 65535"},
		{"ports clash", func(o *Options) { o.ReadOnlyPort = 10250; o.SetOrigin("read-only-port", "--read-only-port") }, "invalid --read-only-port=10250: must differ from --port"},
		{"healthz port", func(o *Options) { o.HealthzPort = 65536; o.SetOrigin("healthz-port", "--healthz-port") }, "invalid --healthz-port=65536: must be between 0 (off) and 65535"},
		{"healthz port from file", func(o *Options) { o.HealthzPort = -1; o.SetOrigin("healthz-port", "field healthzPort in /etc/c.yaml") },
			"invalid field healthzPort in /etc/c.yaml (-1): must be between 0 (off) and 65535"},
		{"healthz port clashes", func(o *Options) { o.HealthzPort = 10250; o.SetOrigin("healthz-port", "--healthz-port") }, "invalid --healthz-port=10250: must differ from --port and --read-only-port"},
		{"healthz bind address", func(o *Options) {
			o.HealthzBindAddress = "localhost"
			o.SetOrigin("healthz-bind-address", "--healthz-bind-address")
		},
			"invalid --healthz-bind-address=localhost: must be an IP address such as 127.0.0.1, 0.0.0.0 or ::"},
		{"sync frequency", func(o *Options) { o.SyncFrequency = 0; o.SetOrigin("sync-frequency", "--sync-frequency") }, "invalid --sync-frequency=0s: must be a positive duration such as 10s"},
		{"status frequency", func(o *Options) {
			o.NodeStatusUpdateFrequency = -time.Second
			o.SetOrigin("node-status-update-frequency", "--node-status-update-frequency")
		},
			"invalid --node-status-update-frequency=-1s: must be a positive duration such as 10s"},
		{"node ip", func(o *Options) { o.NodeIP = "10.0.0.300"; o.SetOrigin("node-ip", "--node-ip") }, `invalid --node-ip=10.0.0.300: "10.0.0.300" is not an IP address`},
		{"address", func(o *Options) { o.Address = "localhost"; o.SetOrigin("address", "--address") }, "invalid --address=localhost: must be an IP address such as 0.0.0.0 or 127.0.0.1"},
		{"hostname", func(o *Options) { o.NodeName = "Node_1"; o.SetOrigin("hostname-override", "--hostname-override") },
			"invalid --hostname-override=Node_1: must be a lowercase DNS name (a-z, 0-9, '-', '.')"},
		{"parallel pulls while serialized", func(o *Options) {
			o.MaxParallelImagePulls = 3
			o.SetOrigin("max-parallel-image-pulls", "--max-parallel-image-pulls")
		}, "invalid --max-parallel-image-pulls=3: cannot be larger than 1 unless --serialize-image-pulls=false"},
		{"negative parallel pulls", func(o *Options) {
			o.SerializeImagePulls, o.MaxParallelImagePulls = false, -1
			o.SetOrigin("max-parallel-image-pulls", "field maxParallelImagePulls in /c.yaml")
		}, "invalid field maxParallelImagePulls in /c.yaml (-1): must be a positive number (0: unset)"},
		{"root dir", func(o *Options) { o.RootDir = "var/lib"; o.SetOrigin("root-dir", "--root-dir") }, "invalid --root-dir=var/lib: must be an absolute path"},
		{"bootstrap without kubeconfig", func(o *Options) {
			o.BootstrapKubeconfig = "/etc/b.conf"
			o.SetOrigin("bootstrap-kubeconfig", "--bootstrap-kubeconfig")
		}, "invalid --bootstrap-kubeconfig=/etc/b.conf: needs --kubeconfig (where the kubeconfig the bootstrap makes is written)"},
		{"rotation standalone", func(o *Options) {
			o.RotateCertificates = true
			o.SetOrigin("rotate-certificates", "field rotateCertificates in /c.yaml")
		}, "invalid field rotateCertificates in /c.yaml (true): needs --kubeconfig (standalone mode has no apiserver to ask)"},
		{"serving rotation with a serving file", func(o *Options) {
			o.Kubeconfig, o.TLSCertFile, o.RotateServerCertificates = "/k", "/c.crt", true
			o.SetOrigin("rotate-server-certificates", "--rotate-server-certificates")
		}, "invalid --rotate-server-certificates=true: cannot be used with --tls-cert-file (the serving certificate comes from a CSR)"},
		{"cert dir", func(o *Options) { o.CertDir = "pki"; o.SetOrigin("cert-dir", "--cert-dir") }, "invalid --cert-dir=pki: must be an absolute path"},
		{"container logs dir", func(o *Options) {
			o.ContainerLogsDir = "logs"
			o.SetOrigin("container-logs-dir", "--container-logs-dir")
		},
			"invalid --container-logs-dir=logs: must be an absolute path"},
		{"container ttl", func(o *Options) {
			o.MinimumContainerTTLDuration = -time.Second
			o.SetOrigin("minimum-container-ttl-duration", "--minimum-container-ttl-duration")
		}, "invalid --minimum-container-ttl-duration=-1s: must be 0 or more"},
		{"manifest path", func(o *Options) {
			o.ManifestPath = "manifests"
			o.SetOrigin("pod-manifest-path", "--pod-manifest-path")
		},
			"invalid --pod-manifest-path=manifests: must be an absolute path"},
		{"runtime endpoint", func(o *Options) {
			o.RuntimeEndpoint = "tcp://1.2.3.4:1"
			o.SetOrigin("container-runtime-endpoint", "--container-runtime-endpoint")
		},
			`invalid --container-runtime-endpoint=tcp://1.2.3.4:1: must be a unix socket (unix:///path or /path) or "fake"`},
		{"image endpoint", func(o *Options) {
			o.ImageEndpoint = "fake"
			o.SetOrigin("image-service-endpoint", "--image-service-endpoint")
		},
			"invalid --image-service-endpoint=fake: must be a unix socket (unix:///path or /path)"},
		{"cluster dns", func(o *Options) {
			o.ClusterDNS = []string{"10.96.0.10", "dns"}
			o.SetOrigin("cluster-dns", "--cluster-dns")
		},
			`invalid --cluster-dns=10.96.0.10,dns: "dns" is not an IP address`},
		{"authorization mode", func(o *Options) {
			o.AuthorizationMode = "RBAC"
			o.SetOrigin("authorization-mode", "--authorization-mode")
		},
			"invalid --authorization-mode=RBAC: must be Webhook or AlwaysAllow"},
		{"verbosity", func(o *Options) { o.Verbosity = 11; o.SetOrigin("v", "--v") }, "invalid --v=11: must be between 0 and 10"},
		{"qps", func(o *Options) { o.APIQPS = -1; o.SetOrigin("kube-api-qps", "--kube-api-qps") }, "invalid --kube-api-qps=-1: must be 0 or more"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := Defaults()
			tc.mutate(&o)
			err := o.Validate()
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n got %q\nwant %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestParallelImagePulls(t *testing.T) {
	for _, tc := range []struct {
		serialize bool
		max       int32
		want      int
	}{{true, 0, 1}, {true, 1, 1}, {false, 0, -1}, {false, 1, 1}, {false, 5, 5}} {
		o := Defaults()
		o.SerializeImagePulls, o.MaxParallelImagePulls = tc.serialize, tc.max
		if got := o.ParallelImagePulls(); got != tc.want {
			t.Errorf("serialize=%v max=%d: ParallelImagePulls() = %d, want %d", tc.serialize, tc.max, got, tc.want)
		}
	}
}

func TestConfigFileAppliesAndFlagsWin(t *testing.T) {
	o, ignored := applyConfig(t, "/etc/lockstep/config.yaml", `
staticPodPath: /etc/kubernetes/manifests
maxPods: 50
readOnlyPort: 10255
syncFrequency: 30s
clusterDNS: [10.96.0.10]
authentication:
  x509: {clientCAFile: /etc/ca.crt}
  anonymous: {enabled: true}
authorization: {mode: AlwaysAllow}
logging: {verbosity: 3}
serializeImagePulls: false
maxParallelImagePulls: 4
cgroupDriver: systemd
evictionHard: {memory.available: 200Mi}
rotateCertificates: true
serverTLSBootstrap: true
`, func(o *Options) { o.MaxPods = 20 }, "max-pods") // the flag, which wins
	want := Defaults()
	want.ManifestPath, want.MaxPods, want.ReadOnlyPort, want.SyncFrequency = "/etc/kubernetes/manifests", 20, 10255, 30*time.Second
	want.ClusterDNS, want.ClientCAFile, want.AuthorizationMode, want.Verbosity = []string{"10.96.0.10"}, "/etc/ca.crt", "AlwaysAllow", 3
	want.SerializeImagePulls, want.MaxParallelImagePulls = false, 4
	want.Cgroups.CgroupDriver = "systemd"
	want.EvictionHard = map[string]string{"memory.available": "200Mi"}
	want.RotateCertificates, want.RotateServerCertificates = true, true
	if diff := cmp.Diff(want, o, cmpopts.IgnoreUnexported(Options{})); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	wantIgnored := []string{"authentication.anonymous.enabled (anonymous access is always off)"}
	if diff := cmp.Diff(wantIgnored, ignored); diff != "" {
		t.Errorf("ignored fields (-want +got):\n%s", diff)
	}
	if got := o.ParallelImagePulls(); got != 4 {
		t.Errorf("ParallelImagePulls() = %d, want 4", got)
	}
	o.ReadOnlyPort = 70000
	if err := o.Validate(); err == nil || err.Error() != "invalid field readOnlyPort in /etc/lockstep/config.yaml (70000): must be between 0 (off) and 65535" {
		t.Errorf("a bad file value must name the field and the file: %v", err)
	}
}

func TestBadConfigFiles(t *testing.T) {
	cases := []struct {
		name, content, want string
	}{
		{"unknown field", string(kubeletConfig("maxPodz: 3\n")), `config file /c.yaml: unknown field "maxPodz"`},
		{"wrong kind", "apiVersion: v1\nkind: Pod\n",
			`config file /c.yaml: want kind KubeletConfiguration, apiVersion kubelet.config.k8s.io/v1beta1; got kind "Pod", apiVersion "v1"`},
		{"wrong type", string(kubeletConfig("maxPods: lots\n")),
			"config file /c.yaml: cannot unmarshal string into Go struct field KubeletConfiguration.maxPods of type int32"},
		{"bad duration", string(kubeletConfig("syncFrequency: soon\n")), `config file /c.yaml: time: invalid duration "soon"`},
		{"not yaml", "a: [b\n", "config file /c.yaml is not valid YAML or JSON: yaml: line 1: did not find expected ',' or ']'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfigFile("/c.yaml", []byte(tc.content))
			if err == nil || err.Error() != tc.want {
				t.Errorf("error:\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestCgroupOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*CgroupOptions)
		err  string
	}{
		{"defaults", func(*CgroupOptions) {}, ""},
		{"unknown driver", func(c *CgroupOptions) { c.CgroupDriver = "cgroupv3" }, "invalid default cgroup-driver=cgroupv3: must be cgroupfs or systemd"},
		{"relative root", func(c *CgroupOptions) { c.CgroupRoot = "pods" }, "must be an absolute cgroup path"},
		{"enforce system-reserved", func(c *CgroupOptions) { c.EnforceNodeAllocatable = []string{"pods", "system-reserved"} },
			"system-reserved is not supported"},
		{"enforce pods without qos cgroups", func(c *CgroupOptions) { c.CgroupsPerQOS = false }, "pods needs --cgroups-per-qos=true"},
		{"none alone", func(c *CgroupOptions) { c.CgroupsPerQOS, c.EnforceNodeAllocatable = false, []string{"none"} }, ""},
		{"bad reserved", func(c *CgroupOptions) { c.KubeReserved = map[string]string{"cpu": "lots"} }, "cpu=lots is not a non-negative quantity"},
		{"unknown reserved", func(c *CgroupOptions) { c.SystemReserved = map[string]string{"gpu": "1"} }, `unknown resource "gpu"`},
		{"qos reserved", func(c *CgroupOptions) { c.QOSReserved = map[string]string{"memory": "150%"} }, "not a percentage"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkValidate(t, func(o *Options) { tc.edit(&o.Cgroups) }, tc.err) })
	}
	c := DefaultCgroupOptions()
	c.KubeReserved = map[string]string{"cpu": "100m", "memory": "256Mi"}
	c.SystemReserved = map[string]string{"cpu": "400m", "pid": "1000"}
	c.QOSReserved = map[string]string{"memory": "50%"}
	got := c.Reserved()
	if got.Cpu().MilliValue() != 500 || got.Memory().Value() != 256<<20 || got.Name("pid", "").Value() != 1000 {
		t.Errorf("Reserved() = %v, want cpu 500m, memory 256Mi, pid 1000", got)
	}
	if cfg := c.Config(); !cfg.CgroupsPerQOS || cfg.Root != "/" || cfg.Driver != "cgroupfs" || !cfg.EnforcePods || cfg.MemoryReservePercent != 50 {
		t.Errorf("Config() = %+v", cfg)
	}
}

// Eviction flags read the kubelet's forms; a bad threshold is a startup
// error naming the flag.
func TestEvictionOptions(t *testing.T) {
	m, err := ParseEvictionMap("memory.available<1Gi, nodefs.available<10%", "<")
	if diff := cmp.Diff(map[string]string{"memory.available": "1Gi", "nodefs.available": "10%"}, m); diff != "" || err != nil {
		t.Errorf("ParseEvictionMap: %v (-want +got):\n%s", err, diff)
	}
	if _, err := ParseEvictionMap("memory.available=1Gi", "<"); err == nil {
		t.Error("ParseEvictionMap accepted the wrong separator")
	}
	o := Defaults()
	o.EvictionSoft = map[string]string{"memory.available": "1Gi"}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "no grace period") {
		t.Errorf("a soft threshold without grace period: %v", err)
	}
	o.EvictionSoftGracePeriod = map[string]string{"memory.available": "30s"}
	if err := o.Validate(); err != nil {
		t.Errorf("valid eviction options refused: %v", err)
	}
}
