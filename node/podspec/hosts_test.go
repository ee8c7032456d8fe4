package podspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// localhostLines are the lines every managed hosts file of a pod on the pod
// network starts with (upstream kubelet_pods.go managedHostsFileContent).
const localhostLines = "# Kubernetes-managed hosts file.\n" +
	"127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"fe00::0\tip6-mcastprefix\n" +
	"fe00::1\tip6-allnodes\n" +
	"fe00::2\tip6-allrouters\n"

// TestHostsFile: the expected files are what upstream v1.37's
// managedHostsFileContent / nodeHostsFileContent / hostsEntriesFromHostAliases
// write for the same pods (hostname and domain from
// GeneratePodHostNameAndDomain).
func TestHostsFile(t *testing.T) {
	aliases := []corev1.HostAlias{
		{IP: "10.9.9.9", Hostnames: []string{"db.internal", "db"}},
		{IP: "fd00::9", Hostnames: []string{"cache"}},
	}
	cases := []struct {
		name      string
		mod       func(*corev1.Pod)
		podIPs    []string
		nodeHosts string
		want      string
	}{
		{
			name:   "pod name as hostname, one IP",
			podIPs: []string{"10.1.0.7"},
			want:   localhostLines + "10.1.0.7\tweb\n",
		},
		{
			name:   "hostname and subdomain: FQDN first, each IP",
			mod:    func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "db-0", "dbs" },
			podIPs: []string{"10.1.0.7", "fd00::7"},
			want: localhostLines +
				"10.1.0.7\tdb-0.dbs.prod.svc.cluster.local\tdb-0\n" +
				"fd00::7\tdb-0.dbs.prod.svc.cluster.local\tdb-0\n",
		},
		{
			name: "hostnameOverride: that name alone, no FQDN",
			mod: func(p *corev1.Pod) {
				p.Spec.Hostname, p.Spec.Subdomain = "db-0", "dbs"
				p.Spec.HostnameOverride = ptr("override-host")
			},
			podIPs: []string{"10.1.0.7"},
			want:   localhostLines + "10.1.0.7\toverride-host\n",
		},
		{
			name:   "hostAliases after a blank line and a comment",
			mod:    func(p *corev1.Pod) { p.Spec.HostAliases = aliases },
			podIPs: []string{"10.1.0.7"},
			want: localhostLines + "10.1.0.7\tweb\n" +
				"\n# Entries added by HostAliases.\n" +
				"10.9.9.9\tdb.internal\tdb\n" +
				"fd00::9\tcache\n",
		},
		{
			name:      "host network: the node's file under its header, then hostAliases",
			mod:       func(p *corev1.Pod) { p.Spec.HostNetwork = true; p.Spec.HostAliases = aliases[:1] },
			podIPs:    []string{"10.0.0.5"},
			nodeHosts: "127.0.0.1 localhost\n10.0.0.5 node-a\n",
			want: "# Kubernetes-managed hosts file (host network).\n" +
				"127.0.0.1 localhost\n10.0.0.5 node-a\n" +
				"\n# Entries added by HostAliases.\n" +
				"10.9.9.9\tdb.internal\tdb\n",
		},
		{
			name:   "long pod name cut to 63 characters",
			mod:    func(p *corev1.Pod) { p.Name = strings.Repeat("a", 62) + "-bcd" },
			podIPs: []string{"10.1.0.7"},
			want:   localhostLines + "10.1.0.7\t" + strings.Repeat("a", 62) + "\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			if tc.mod != nil {
				tc.mod(pod)
			}
			got, err := HostsFile(pod, tc.podIPs, testNode(), []byte(tc.nodeHosts))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("hosts file (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostsFileRefusesAnInvalidSubdomain(t *testing.T) {
	pod := testPod(func(p *corev1.Pod) { p.Spec.Subdomain = "Not_A_Label" })
	if _, err := HostsFile(pod, []string{"10.1.0.7"}, testNode(), nil); err == nil || !strings.Contains(err.Error(), "subdomain") {
		t.Fatalf("err = %v, want a subdomain error", err)
	}
}

// TestHostsMount: upstream's shouldMountHostsFile and makeMounts: the hosts
// file is mounted (writable, last) once the pod has an IP or uses the host
// network, and not over a volume the container mounts at /etc/hosts.
func TestHostsMount(t *testing.T) {
	hosts := &runtimeapi.Mount{ContainerPath: "/etc/hosts", HostPath: "/r/pods/uid-1/etc-hosts"}
	cases := []struct {
		name   string
		mod    func(*corev1.Pod)
		podIPs []string
		want   []*runtimeapi.Mount
	}{
		{"pod network with an IP", nil, []string{"10.1.0.7"}, []*runtimeapi.Mount{hosts}},
		{"pod network without an IP yet", nil, nil, nil},
		{"host network", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, nil, []*runtimeapi.Mount{hosts}},
		{"a volume mounted at /etc/hosts wins", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "h", MountPath: "/etc/hosts", SubPath: "hosts"}}
		}, []string{"10.1.0.7"}, []*runtimeapi.Mount{
			{ContainerPath: "/etc/hosts", HostPath: "/r/pods/uid-1/volumes/kubernetes.io~empty-dir/h/hosts"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			if tc.mod != nil {
				tc.mod(pod)
			}
			node := testNode()
			node.RootDir = "/r"
			cfg, err := ContainerConfigWith(pod, &pod.Spec.Containers[0], ContainerOptions{PodIPs: tc.podIPs}, node)
			if err != nil {
				t.Fatal(err)
			}
			diffProto(t, tc.want, cfg.Mounts)
		})
	}
}
