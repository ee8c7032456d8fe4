package scenarios

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/agent"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// TestNodeReadyAndLeaseFresh: the agent registers its node, reports it
// Ready, and keeps its lease fresh (lease-fresh, node-ready) while pods
// come and go and even across an agent restart shorter than the lease.
func TestNodeReadyAndLeaseFresh(t *testing.T) {
	h := start(t, 41)
	createMixed(t, h.NodeName, func(p *corev1.Pod) { mustCreate(t, h, p) })
	for i := range 120 {
		if err := h.K.RunFor(time.Second); err != nil {
			t.Fatal(err)
		}
		if i == 60 {
			h.CrashAgent()
			if err := h.K.RunFor(15 * time.Second); err != nil {
				t.Fatal(err)
			}
			h.StartAgent()
		}
		if i < 5 {
			continue
		}
		lease, err := h.API.User().GetLease(nodestatus.LeaseNamespace, h.NodeName)
		if err != nil {
			t.Fatalf("+%v: node lease: %v", h.K.Elapsed(), err)
		}
		if age := h.K.Now().Sub(lease.Spec.RenewTime.Time); age > 40*time.Second {
			t.Errorf("lease-fresh at +%v: lease renewed %v ago", h.K.Elapsed(), age)
		}
	}
	nodes := h.API.User().Nodes()
	if len(nodes) != 1 || nodes[0].Name != h.NodeName {
		t.Fatalf("nodes: %+v", nodes)
	}
	ready := false
	for _, c := range nodes[0].Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		t.Errorf("node-ready: node conditions %+v", nodes[0].Status.Conditions)
	}
	if v := nodes[0].Status.NodeInfo.ContainerRuntimeVersion; v == "" {
		t.Errorf("node info lacks the runtime version")
	}
}

// TestNodeReportsKubeletEndpointAndInternalIP: the node tells the
// apiserver where to reach the agent's API, as the kubelet does: its
// InternalIP address and status.daemonEndpoints.kubeletEndpoint.Port. The
// apiserver dials that pair for logs, exec and port forwarding (with
// --kubelet-preferred-address-types=InternalIP), so a node reporting port 0
// serves none of them.
func TestNodeReportsKubeletEndpointAndInternalIP(t *testing.T) {
	h := harness.New(harness.Config{Seed: 43, Agent: agent.Config{
		NodeStatus: nodestatus.Config{NodeIP: "10.0.0.7", KubeletPort: 10250},
	}})
	t.Cleanup(h.Close)
	h.StartAgent()
	runUntil(t, h, "node registered", time.Minute, func() bool { return len(h.API.User().Nodes()) == 1 })
	if err := h.K.RunFor(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	type endpoint struct {
		Addresses []corev1.NodeAddress
		Port      int32
	}
	n := h.API.User().Nodes()[0]
	got := endpoint{n.Status.Addresses, n.Status.DaemonEndpoints.KubeletEndpoint.Port}
	want := endpoint{[]corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.0.0.7"},
		{Type: corev1.NodeHostName, Address: h.NodeName},
	}, 10250}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("node endpoint (-want +got):\n%s", diff)
	}
}

// TestNodeObjectIdentity: what the whole agent tells the control plane
// about its node in the simulator — the well-known and beta os/arch
// labels with the configured ones, the registration taints, the
// Kubernetes version it stands in for beside its own version annotation,
// the runtime's images largest first, and its runtime handlers.
func TestNodeObjectIdentity(t *testing.T) {
	h := harness.New(harness.Config{Seed: 44, Agent: agent.Config{
		NodeStatus: nodestatus.Config{
			NodeIP: "10.0.0.7", KubeletPort: 10250, AgentVersion: "lockstep test",
			Labels: map[string]string{"node.kubernetes.io/pool": "edge"},
			Taints: []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}},
		},
	}})
	t.Cleanup(h.Close)
	h.StartAgent()
	runUntil(t, h, "node registered with images", time.Minute, func() bool {
		n := h.API.User().Nodes()
		return len(n) == 1 && len(n[0].Status.Images) > 0
	})
	n := h.API.User().Nodes()[0]
	imgs, err := h.Runtime.ListImages(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(imgs, func(a, b *runtimeapi.Image) int { return cmp.Compare(b.GetSize(), a.GetSize()) })
	var wantImages []string
	for _, img := range imgs {
		wantImages = append(wantImages, img.RepoTags[0])
	}
	var gotImages []string
	for _, img := range n.Status.Images {
		gotImages = append(gotImages, img.Names[len(img.Names)-1])
	}
	var handlers []string
	for _, rh := range n.Status.RuntimeHandlers {
		handlers = append(handlers, rh.Name)
	}
	type identity struct {
		Labels         map[string]string
		Taints         []corev1.Taint
		KubeletVersion string
		Annotation     string
		Images         []string
		Handlers       []string
	}
	arch := n.Labels[corev1.LabelArchStable]
	want := identity{
		Labels: map[string]string{
			"node.kubernetes.io/pool": "edge", corev1.LabelHostname: h.NodeName,
			corev1.LabelOSStable: "linux", corev1.LabelArchStable: arch,
			"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": arch,
		},
		Taints:         []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}},
		KubeletVersion: "v1.37.2",
		Annotation:     "lockstep test",
		Images:         wantImages,
		Handlers:       []string{"", "runc"},
	}
	got := identity{n.Labels, n.Spec.Taints, n.Status.NodeInfo.KubeletVersion, n.Annotations[nodestatus.AnnotationAgentVersion], gotImages, handlers}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("node identity (-want +got):\n%s", diff)
	}
}
