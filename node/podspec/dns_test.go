package podspec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestDNSConfig(t *testing.T) {
	host := ResolvConf{
		Servers:  []string{"192.168.1.1", "192.168.1.2"},
		Searches: []string{"corp.example", "cluster.local"},
		Options:  []string{"timeout:2", "rotate"},
	}
	node := testNode()
	node.HostDNS = host
	noClusterDNS := node
	noClusterDNS.ClusterDNS = nil
	noResolver := node
	noResolver.ResolverConfig = ""
	noResolver.ClusterDNS = nil
	noResolverV6 := noResolver
	noResolverV6.HostIP, noResolverV6.HostIPs = "fd00::5", []string{"fd00::5", "10.0.0.5"}
	hostFileUnread := node
	hostFileUnread.HostDNS = ResolvConf{}

	clusterSearch := []string{"prod.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"}
	tests := []struct {
		name        string
		policy      corev1.DNSPolicy
		hostNetwork bool
		podDNS      *corev1.PodDNSConfig
		node        NodeInfo
		want        *runtimeapi.DNSConfig
		wantErr     string
	}{
		{
			name: "ClusterFirst", policy: corev1.DNSClusterFirst, node: node,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
		},
		{
			name: "empty policy is ClusterFirst", node: node,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
		},
		{
			name: "ClusterFirst on host network is Default", policy: corev1.DNSClusterFirst, hostNetwork: true, node: node,
			want: &runtimeapi.DNSConfig{Servers: host.Servers, Searches: host.Searches, Options: host.Options},
		},
		{
			name: "ClusterFirstWithHostNet on host network", policy: corev1.DNSClusterFirstWithHostNet, hostNetwork: true, node: node,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
		},
		{
			name: "ClusterFirst without cluster DNS falls back to Default", policy: corev1.DNSClusterFirst, node: noClusterDNS,
			want: &runtimeapi.DNSConfig{Servers: host.Servers, Searches: host.Searches, Options: host.Options},
		},
		{
			name: "Default", policy: corev1.DNSDefault, node: node,
			want: &runtimeapi.DNSConfig{Servers: host.Servers, Searches: host.Searches, Options: host.Options},
		},
		{
			name: "Default with the host file unread leaves it to the runtime", policy: corev1.DNSDefault, node: hostFileUnread,
			want: &runtimeapi.DNSConfig{},
		},
		{
			name: "Default without a resolver config", policy: corev1.DNSDefault, node: noResolver,
			want: &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}},
		},
		{
			name: "Default without a resolver config, dual-stack IPv6-first node", policy: corev1.DNSDefault, node: noResolverV6,
			want: &runtimeapi.DNSConfig{Servers: []string{"::1", "127.0.0.1"}, Searches: []string{"."}},
		},
		{
			name: "ClusterFirst without cluster DNS nor resolver config", policy: corev1.DNSClusterFirst, node: noResolver,
			want: &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}},
		},
		{
			name: "None without pod DNS config", policy: corev1.DNSNone, node: node,
			want: &runtimeapi.DNSConfig{},
		},
		{
			name: "None takes only the pod's config", policy: corev1.DNSNone, node: node,
			podDNS: &corev1.PodDNSConfig{
				Nameservers: []string{"1.1.1.1"},
				Searches:    []string{"a.example"},
				Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}, {Name: "edns0"}},
			},
			want: &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"a.example"}, Options: []string{"ndots:2", "edns0"}},
		},
		{
			name: "ClusterFirst merges the pod's config", policy: corev1.DNSClusterFirst, node: node,
			podDNS: &corev1.PodDNSConfig{
				Nameservers: []string{"1.1.1.1", "10.96.0.10"},
				Searches:    []string{"svc.cluster.local", "b.example"},
				Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("1")}, {Name: "single-request"}},
			},
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10", "1.1.1.1"},
				Searches: append(append([]string{}, clusterSearch...), "b.example"),
				Options:  []string{"ndots:1", "single-request"},
			},
		},
		{
			name: "Default merges the pod's config and caps servers at 3", policy: corev1.DNSDefault, node: node,
			podDNS: &corev1.PodDNSConfig{
				Nameservers: []string{"1.1.1.1", "8.8.8.8"},
				Options:     []corev1.PodDNSConfigOption{{Name: "timeout", Value: ptr("5")}},
			},
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"192.168.1.1", "192.168.1.2", "1.1.1.1"},
				Searches: host.Searches,
				Options:  []string{"timeout:5", "rotate"},
			},
		},
		{
			name: "unknown policy", policy: "Sometimes", node: node, wantErr: `dnsPolicy "Sometimes" is not supported`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(func(p *corev1.Pod) {
				p.Spec.DNSPolicy = tt.policy
				p.Spec.HostNetwork = tt.hostNetwork
				p.Spec.DNSConfig = tt.podDNS
			})
			got, err := dnsConfig(pod, tt.node)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			diffProto(t, tt.want, got)
		})
	}
}

func TestDNSConfigDoesNotAliasNodeInfo(t *testing.T) {
	node := testNode()
	node.HostDNS = ResolvConf{Servers: []string{"192.168.1.1"}, Options: []string{"ndots:3"}}
	pod := testPod(func(p *corev1.Pod) {
		p.Spec.DNSPolicy = corev1.DNSDefault
		p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("1")}}}
	})
	if _, err := dnsConfig(pod, node); err != nil {
		t.Fatal(err)
	}
	want := ResolvConf{Servers: []string{"192.168.1.1"}, Options: []string{"ndots:3"}}
	if d := cmp.Diff(want, node.HostDNS); d != "" {
		t.Errorf("NodeInfo.HostDNS changed (-want +got):\n%s", d)
	}
}

func TestDNSSearchLimits(t *testing.T) {
	long := strings.Repeat("x", 254)
	var many []string
	for i := range 40 {
		many = append(many, fmt.Sprintf("d%02d.example", i))
	}
	var wide []string // 30 domains of 99 characters: 30*100-1 = 2999 characters of search line
	for i := range 30 {
		wide = append(wide, fmt.Sprintf("%02d", i)+strings.Repeat("w", 97))
	}
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"too long a domain is dropped", []string{"a.example", long, "b.example"}, []string{"a.example", "b.example"}},
		{"at most 32 domains", many, many[:32]},
		{"search line at most 2048 characters", wide, wide[:20]}, // 20*100-1 = 1999 fits, 21 would be 2099
	}
	for _, tt := range tests {
		pod := testPod(func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: tt.in}
		})
		got, err := dnsConfig(pod, testNode())
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tt.want, got.GetSearches()); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

func TestParseResolvConf(t *testing.T) {
	data := `# generated
nameserver 192.168.1.1
  nameserver   192.168.1.2   # trailing text is ignored
; old comment style
nameserver
search first.example
search corp.example. . cluster.local
domain ignored.example
options timeout:1 rotate
options timeout:2 ndots:3
`
	want := ResolvConf{
		Servers:  []string{"192.168.1.1", "192.168.1.2"},
		Searches: []string{"corp.example", "cluster.local"},
		Options:  []string{"timeout:2", "rotate", "ndots:3"},
	}
	if d := cmp.Diff(want, ParseResolvConf([]byte(data))); d != "" {
		t.Errorf("ParseResolvConf (-want +got):\n%s", d)
	}
	if d := cmp.Diff(ResolvConf{}, ParseResolvConf(nil)); d != "" {
		t.Errorf("ParseResolvConf(nil) (-want +got):\n%s", d)
	}
}
