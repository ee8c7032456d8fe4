package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/agent"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// withHostAliases gives the pod a hostname, a subdomain and two host
// aliases.
func withHostAliases(p *corev1.Pod) {
	p.Spec.Hostname, p.Spec.Subdomain = "db-0", "dbs"
	p.Spec.HostAliases = []corev1.HostAlias{
		{IP: "10.9.9.9", Hostnames: []string{"db.internal", "db"}},
		{IP: "10.9.9.10", Hostnames: []string{"cache"}},
	}
}

// hostsOf reads the hosts file mounted at /etc/hosts in the running
// container app of a pod.
func hostsOf(t *testing.T, h *harness.Harness, pod *corev1.Pod) string {
	t.Helper()
	src := mountOf(h, pod.UID, "app", "/etc/hosts")
	if want := podspec.HostsFilePath("", pod.UID); src != want {
		t.Fatalf("/etc/hosts of container app is mounted from %q; want %q", src, want)
	}
	data, err := h.Files.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestHostsFileOfAPodWithAliases: every container of a pod on the pod
// network gets the kubelet-managed hosts file at /etc/hosts: localhost
// lines, the pod's IP with its FQDN (hostname.subdomain.namespace.svc.
// domain) and hostname, then the hostAliases under their comment; the
// pod runs with no UnsupportedPodField warning; the file goes with the
// pod's directory once the pod is deleted.
func TestHostsFileOfAPodWithAliases(t *testing.T) {
	h := harness.New(harness.Config{Seed: 91, Agent: agent.Config{Node: podspec.NodeInfo{ClusterDomain: "cluster.local"}}})
	t.Cleanup(h.Close)
	h.StartAgent()
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("db", h.NodeName, withHostAliases))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "db", corev1.PodRunning, true) })
	api, _ := APIPod(h, "default", "db")
	ip := api.Status.PodIP
	if ip == "" {
		t.Fatal("the running pod reports no IP")
	}
	want := "# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n" +
		ip + "\tdb-0.dbs.default.svc.cluster.local\tdb-0\n" +
		"\n# Entries added by HostAliases.\n" +
		"10.9.9.9\tdb.internal\tdb\n" +
		"10.9.9.10\tcache\n"
	if diff := cmp.Diff(want, hostsOf(t, h, pod)); diff != "" {
		t.Errorf("/etc/hosts (-want +got):\n%s", diff)
	}
	for _, e := range h.API.User().Events() {
		if e.Reason == "UnsupportedPodField" {
			t.Errorf("unexpected warning: %s", e.Message)
		}
	}
	if err := h.API.User().DeletePodGracefully("default", "db", nil); err != nil {
		t.Fatal(err)
	}
	runChecked(t, h, c, 40*time.Second)
	if h.Files.Exists(podspec.HostsFilePath("", pod.UID)) {
		t.Errorf("the hosts file of the deleted pod remains")
	}
}

// TestHostsFileOfAHostNetworkPod: a host-network pod's /etc/hosts is the
// node's hosts file under the host-network header, then its hostAliases.
func TestHostsFileOfAHostNetworkPod(t *testing.T) {
	h := start(t, 92)
	pod := mustCreate(t, h, NewPod("hostnet", h.NodeName, withHostAliases, func(p *corev1.Pod) { p.Spec.HostNetwork = true }))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "hostnet", corev1.PodRunning, true) })
	want := "# Kubernetes-managed hosts file (host network).\n" + harness.NodeHosts(h.NodeName) +
		"\n# Entries added by HostAliases.\n" +
		"10.9.9.9\tdb.internal\tdb\n" +
		"10.9.9.10\tcache\n"
	if diff := cmp.Diff(want, hostsOf(t, h, pod)); diff != "" {
		t.Errorf("/etc/hosts (-want +got):\n%s", diff)
	}
}
