package podspec

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

func TestSandboxConfig(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web", podstate.LabelPodName: "spoofed", podstate.LabelManaged: "no"}
		p.Annotations = map[string]string{"note": "hello"}
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, HostPort: 80, HostIP: "10.0.0.5"},
			{ContainerPort: 53, Protocol: corev1.ProtocolUDP},
			{Name: "http", ContainerPort: 9090}, // same name again: dropped
			{ContainerPort: 53, Protocol: corev1.ProtocolUDP},
		}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: "side", Image: "proxy",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8081, Protocol: corev1.ProtocolSCTP}},
		})
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Ports: []corev1.ContainerPort{{ContainerPort: 1}}}}
	})
	got, err := SandboxConfig(pod, 2, testNode(), "")
	if err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "prod", Uid: "uid-1", Attempt: 2},
		Hostname:     "web",
		LogDirectory: "/var/log/pods/prod_web_uid-1",
		DnsConfig: &runtimeapi.DNSConfig{
			Servers:  []string{"10.96.0.10"},
			Searches: []string{"prod.svc.cluster.local", "svc.cluster.local", "cluster.local"},
			Options:  []string{"ndots:5"},
		},
		PortMappings: []*runtimeapi.PortMapping{
			{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 8080, HostPort: 80, HostIp: "10.0.0.5"},
			{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53},
			{Protocol: runtimeapi.Protocol_SCTP, ContainerPort: 8081},
		},
		Labels: map[string]string{
			"app":                      "web",
			podstate.LabelPodUID:       "uid-1",
			podstate.LabelPodName:      "web",
			podstate.LabelPodNamespace: "prod",
			podstate.LabelManaged:      "true",
		},
		Annotations: map[string]string{"note": "hello"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network:       runtimeapi.NamespaceMode_POD,
					Pid:           runtimeapi.NamespaceMode_CONTAINER,
					Ipc:           runtimeapi.NamespaceMode_POD,
					UsernsOptions: nodeUserns(),
				},
				Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
			// No requests or limits, no overhead (SandboxResources).
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000},
			Overhead:  &runtimeapi.LinuxContainerResources{},
		},
	}
	diffProto(t, want, got)

	ref, err := podstate.PodRefFromLabels(got.Labels)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(podstate.PodRef{UID: "uid-1", Name: "web", Namespace: "prod"}, ref); d != "" {
		t.Errorf("PodRefFromLabels (-want +got):\n%s", d)
	}

	// The config owns its maps: changing them leaves the pod alone.
	got.Labels["app"] = "changed"
	got.Annotations["note"] = "changed"
	if pod.Labels["app"] != "web" || pod.Annotations["note"] != "hello" {
		t.Errorf("config maps alias the pod's: labels %v annotations %v", pod.Labels, pod.Annotations)
	}
}

func TestSandboxHostNetwork(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.HostNetwork = true
		p.Spec.Hostname = "ignored"
	})
	got, err := SandboxConfig(pod, 0, testNode(), "")
	if err != nil {
		t.Fatal(err)
	}
	if got.Hostname != "" {
		t.Errorf("host-network sandbox hostname = %q, want empty (runc refuses a hostname without a UTS namespace)", got.Hostname)
	}
	if n := got.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork(); n != runtimeapi.NamespaceMode_NODE {
		t.Errorf("network namespace = %v, want NODE", n)
	}
}

func TestSandboxHostname(t *testing.T) {
	long := strings.Repeat("a", 60) + "-b.c" + strings.Repeat("d", 10) // cut at 63 ends in "-b."
	tests := []struct {
		name    string
		mod     func(*corev1.Pod)
		want    string
		wantErr string
	}{
		{name: "pod name", want: "web"},
		{name: "spec hostname", mod: func(p *corev1.Pod) { p.Spec.Hostname = "box" }, want: "box"},
		{name: "long name truncated without trailing - or .", mod: func(p *corev1.Pod) { p.Name = long }, want: strings.Repeat("a", 60) + "-b"},
		{name: "63 characters kept", mod: func(p *corev1.Pod) { p.Name = strings.Repeat("x", 63) }, want: strings.Repeat("x", 63)},
		{name: "invalid hostname", mod: func(p *corev1.Pod) { p.Spec.Hostname = "Not_Valid" }, wantErr: `hostname "Not_Valid" is not a valid DNS label`},
		{name: "subdomain alone changes nothing", mod: func(p *corev1.Pod) { p.Spec.Subdomain = "sub" }, want: "web"},
		{
			name: "FQDN as hostname",
			mod: func(p *corev1.Pod) {
				p.Spec.Hostname, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = "box", "sub", ptr(true)
			},
			want: "box.sub.prod.svc.cluster.local",
		},
		{
			name: "FQDN too long",
			mod: func(p *corev1.Pod) {
				p.Spec.Hostname, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = strings.Repeat("h", 40), "sub", ptr(true)
			},
			wantErr: "failed to construct FQDN from pod hostname and cluster domain, FQDN " + strings.Repeat("h", 40) +
				".sub.prod.svc.cluster.local is too long (64 characters is the max, 67 characters requested)",
		},
		{
			name: "FQDN of 64 characters kept",
			mod: func(p *corev1.Pod) {
				p.Spec.Hostname, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = strings.Repeat("h", 37), "sub", ptr(true)
			},
			want: strings.Repeat("h", 37) + ".sub.prod.svc.cluster.local",
		},
		{
			name: "FQDN too long without setHostnameAsFQDN: the short hostname",
			mod: func(p *corev1.Pod) {
				p.Spec.Hostname, p.Spec.Subdomain = strings.Repeat("h", 40), "sub"
			},
			want: strings.Repeat("h", 40),
		},
		{name: "invalid subdomain", mod: func(p *corev1.Pod) { p.Spec.Subdomain = "a.b" }, wantErr: `subdomain "a.b" is not a valid DNS label`},
		// Upstream GeneratePodHostNameAndDomain: hostnameOverride wins over
		// hostname and subdomain, and may be a dotted DNS subdomain.
		{
			name: "hostnameOverride wins over hostname, subdomain and FQDN",
			mod: func(p *corev1.Pod) {
				p.Spec.Hostname, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = "box", "sub", ptr(true)
				p.Spec.HostnameOverride = ptr("override.example")
			},
			want: "override.example",
		},
		{
			name: "long hostnameOverride truncated",
			mod:  func(p *corev1.Pod) { p.Spec.HostnameOverride = ptr(long) },
			want: strings.Repeat("a", 60) + "-b",
		},
		{
			name:    "invalid hostnameOverride",
			mod:     func(p *corev1.Pod) { p.Spec.HostnameOverride = ptr("Bad_Host") },
			wantErr: `hostnameOverride "Bad_Host" is not a valid DNS subdomain`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mods []func(*corev1.Pod)
			if tt.mod != nil {
				mods = append(mods, tt.mod)
			}
			pod := testPod(mods...)
			got, err := SandboxConfig(pod, 0, testNode(), "")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "sandbox of pod prod/") {
					t.Fatalf("err = %v, want one naming the pod and containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Hostname != tt.want {
				t.Errorf("hostname = %q, want %q", got.Hostname, tt.want)
			}
		})
	}
}

// TestSandboxConfigErrorCarriesTheCause: a sandbox config error names
// the pod, and its Cause is the kubelet's text alone (what a
// FailedCreatePodSandBox event carries).
func TestSandboxConfigErrorCarriesTheCause(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) {
		p.Name, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = "hostfqdnveryveryveryverylongforfqdntobemorethan64bytes-1", "t", ptr(true)
	})
	_, err := SandboxConfig(pod, 0, testNode(), "")
	var sce *SandboxConfigError
	if !errors.As(err, &sce) {
		t.Fatalf("err = %v, want a *SandboxConfigError", err)
	}
	want := "failed to construct FQDN from pod hostname and cluster domain, FQDN " +
		"hostfqdnveryveryveryverylongforfqdntobemorethan64bytes-1.t.prod.svc.cluster.local is too long (64 characters is the max, 81 characters requested)"
	if sce.Pod != "prod/hostfqdnveryveryveryverylongforfqdntobemorethan64bytes-1" || sce.Cause.Error() != want {
		t.Errorf("pod %q cause %q, want prod/… and %q", sce.Pod, sce.Cause, want)
	}
}

func TestNamespaceOptions(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*corev1.Pod)
		want *runtimeapi.NamespaceOption
	}{
		{"defaults", func(*corev1.Pod) {}, &runtimeapi.NamespaceOption{
			Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD, UsernsOptions: nodeUserns()}},
		{"hostNetwork", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, &runtimeapi.NamespaceOption{
			Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD, UsernsOptions: nodeUserns()}},
		{"hostPID", func(p *corev1.Pod) { p.Spec.HostPID = true }, &runtimeapi.NamespaceOption{
			Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_POD, UsernsOptions: nodeUserns()}},
		{"hostIPC", func(p *corev1.Pod) { p.Spec.HostIPC = true }, &runtimeapi.NamespaceOption{
			Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_NODE, UsernsOptions: nodeUserns()}},
		{"shareProcessNamespace", func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptr(true) }, &runtimeapi.NamespaceOption{
			Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_POD, Ipc: runtimeapi.NamespaceMode_POD, UsernsOptions: nodeUserns()}},
		// hostUsers: true is the node's namespace, as unset; false leaves
		// it to the executor (SetUserNamespace with the pod's mappings).
		{"hostUsers true", func(p *corev1.Pod) { p.Spec.HostUsers = ptr(true) }, &runtimeapi.NamespaceOption{
			Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD, UsernsOptions: nodeUserns()}},
		{"hostUsers false", func(p *corev1.Pod) { p.Spec.HostUsers = ptr(false) }, &runtimeapi.NamespaceOption{
			Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}},
	}
	for _, tt := range tests {
		pod := testPod(tt.mod)
		sb, err := SandboxConfig(pod, 0, testNode(), "")
		if err != nil {
			t.Fatal(err)
		}
		c, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{}, testNode())
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tt.name+"/sandbox", func(t *testing.T) { diffProto(t, tt.want, sb.GetLinux().GetSecurityContext().GetNamespaceOptions()) })
		t.Run(tt.name+"/container", func(t *testing.T) { diffProto(t, tt.want, c.GetLinux().GetSecurityContext().GetNamespaceOptions()) })
	}
}

func TestLogPaths(t *testing.T) {
	ref := podstate.PodRef{UID: "u-1", Name: "web", Namespace: "prod"}
	if got, want := LogDirectory("", ref), "/var/log/pods/prod_web_u-1"; got != want {
		t.Errorf("LogDirectory default root = %q, want %q", got, want)
	}
	if got, want := LogDirectory("/scratch/logs", ref), "/scratch/logs/prod_web_u-1"; got != want {
		t.Errorf("LogDirectory = %q, want %q", got, want)
	}
	if got, want := ContainerLogPath("app", 3), "app/3.log"; got != want {
		t.Errorf("ContainerLogPath = %q, want %q", got, want)
	}
	node := testNode()
	node.PodLogsRoot = "/scratch/logs"
	sb, err := SandboxConfig(testPod(), 0, node, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sb.LogDirectory, "/scratch/logs/prod_web_uid-1"; got != want {
		t.Errorf("sandbox LogDirectory = %q, want %q", got, want)
	}
}

func TestContainerLogNames(t *testing.T) {
	ref := podstate.PodRef{UID: "u1", Name: "web", Namespace: "ns"}
	if got, want := ContainerLogFile("", ref, "app", 2), "/var/log/pods/ns_web_u1/app/2.log"; got != want {
		t.Errorf("ContainerLogFile = %q, want %q", got, want)
	}
	if got, want := ContainerLogSymlink("", ref, "app", "abc"), "/var/log/containers/web_ns_app-abc.log"; got != want {
		t.Errorf("ContainerLogSymlink = %q, want %q", got, want)
	}
	long := podstate.PodRef{UID: "u1", Name: strings.Repeat("p", 253), Namespace: "ns"}
	got := ContainerLogSymlink("/c", long, "app", "abc")
	if base := filepath.Base(got); len(base) != 255 || !strings.HasSuffix(base, ".log") {
		t.Errorf("long symlink name %q: %d bytes, want 255 ending in .log", base, len(base))
	}
}

func TestSandboxConfigCgroupParent(t *testing.T) {
	sb, err := SandboxConfig(testPod(), 0, testNode(), "/kubepods/burstable/pod123")
	if err != nil {
		t.Fatal(err)
	}
	if got := sb.Linux.CgroupParent; got != "/kubepods/burstable/pod123" {
		t.Errorf("CgroupParent = %q, want the one given", got)
	}
}
