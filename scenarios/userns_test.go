package scenarios

import (
	"context"
	"fmt"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// noHostUsers asks for a user namespace of the pod's own.
func noHostUsers(p *corev1.Pod) {
	no := false
	p.Spec.HostUsers = &no
}

// TestUserNamespaceNeedsRuntimeSupport: on a runtime whose handlers do
// not report the user_namespaces feature (containerd 1.6 reports no
// handlers at all), a hostUsers: false pod gets no sandbox: it stays
// Pending (ContainerCreating) with upstream's FailedCreatePodSandBox
// event, naming the handler when a RuntimeClass picks one, and nothing
// of it runs in the node's user namespace. Other pods run. Before, such
// pods failed admission as unsupported.
func TestUserNamespaceNeedsRuntimeSupport(t *testing.T) {
	h := harness.New(harness.Config{
		Seed:    141,
		Replay:  func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) },
		Runtime: fakecri.Config{RuntimeHandlers: []string{"runc", "kata"}},
	})
	t.Cleanup(h.Close)
	h.StartAgent()
	h.API.User().PutRuntimeClass(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "sandboxed"}, Handler: "kata"})
	mustCreate(t, h, NewPod("userns", h.NodeName, noHostUsers))
	mustCreate(t, h, NewPod("userns-kata", h.NodeName, noHostUsers, runtimeClass("sandboxed")))
	mustCreate(t, h, NewPod("plain", h.NodeName))
	runUntil(t, h, "plain Running", time.Minute, func() bool { return PodIs(h, "default", "plain", corev1.PodRunning, true) })
	if err := h.K.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"userns":      "Warning FailedCreatePodSandBox: Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces",
		"userns-kata": "Warning FailedCreatePodSandBox: Failed to create pod sandbox: can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces",
	} {
		if ev := eventsAbout(h, "default", name); !slices.Contains(ev, want) {
			t.Errorf("%s: events %q; want %q", name, ev, want)
		}
		p, _ := APIPod(h, "default", name)
		if p.Status.Phase != corev1.PodPending || len(p.Status.ContainerStatuses) != 1 ||
			p.Status.ContainerStatuses[0].State.Waiting == nil || p.Status.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
			t.Errorf("%s: phase %s statuses %+v; want Pending, waiting ContainerCreating", name, p.Status.Phase, p.Status.ContainerStatuses)
		}
	}
	sbs, _ := h.Runtime.ListPodSandbox(context.Background(), nil)
	if len(sbs) != 1 || sbs[0].GetMetadata().GetName() != "plain" {
		t.Errorf("sandboxes %v; want only plain's", sbs)
	}
}

// usernsOf returns the user namespace option of the latest sandbox of a
// pod and of each of its containers, as the runtime got them.
func usernsOf(t *testing.T, h *harness.Harness, uid types.UID) (*runtimeapi.UserNamespace, []*runtimeapi.UserNamespace) {
	t.Helper()
	var sb *runtimeapi.UserNamespace
	for _, s := range h.Runtime.TrueSandboxes() {
		if s.GetMetadata().GetUid() == string(uid) {
			cfg, _ := h.Runtime.TrueSandboxConfig(s.GetId())
			sb = cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
		}
	}
	var cs []*runtimeapi.UserNamespace
	for _, c := range PodContainers(h, uid) {
		cfg, _ := h.Runtime.TrueContainerConfig(c.ID)
		cs = append(cs, cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions())
	}
	return sb, cs
}

// TestUserNamespaceMappingsDisjointAndKept: on a runtime with user
// namespaces, each hostUsers: false pod's sandbox and containers get one
// range of 65536 IDs (host ID a multiple of 65536, from 65536 up; users
// and groups alike, from container ID 0), ranges of different pods never
// overlap, a pod sharing the node's gets mode NODE; the ranges are
// checkpointed in the pods' directories, so after an agent crash a
// restarted container gets its pod's range again and a new pod's range
// overlaps none of the old ones; a deleted pod's checkpoint goes with it.
func TestUserNamespaceMappingsDisjointAndKept(t *testing.T) {
	t.Parallel()
	h := harness.New(harness.Config{
		Seed:    142,
		Replay:  func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) },
		Runtime: fakecri.Config{UserNamespaces: true},
	})
	t.Cleanup(h.Close)
	h.StartAgent()
	c := NewChecker(h)
	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, mustCreate(t, h, NewPod(fmt.Sprintf("u%d", i), h.NodeName, noHostUsers, Exits("app", 30*time.Second, 1))))
	}
	plain := mustCreate(t, h, NewPod("plain", h.NodeName))
	runUntil(t, h, "all pods run", time.Minute, func() bool {
		for _, p := range append(slices.Clone(pods), plain) {
			if !PodIs(h, "default", p.Name, corev1.PodRunning, false) {
				return false
			}
		}
		return true
	})
	if sb, cs := usernsOf(t, h, plain.UID); sb.GetMode() != runtimeapi.NamespaceMode_NODE || len(cs) != 1 || cs[0].GetMode() != runtimeapi.NamespaceMode_NODE {
		t.Errorf("plain pod's user namespace: sandbox %v containers %v; want mode NODE", sb, cs)
	}
	first := map[types.UID]uint32{}
	check := func(stage string) {
		t.Helper()
		for _, p := range pods {
			sb, cs := usernsOf(t, h, p.UID)
			if sb.GetMode() != runtimeapi.NamespaceMode_POD || len(sb.GetUids()) != 1 {
				t.Fatalf("%s: %s sandbox user namespace %v; want mode POD with one mapping", stage, p.Name, sb)
			}
			m := sb.GetUids()[0]
			if m.GetLength() != 65536 || m.GetContainerId() != 0 || m.GetHostId() < 65536 || m.GetHostId()%65536 != 0 {
				t.Errorf("%s: %s mapping %v; want 65536 IDs from container 0 at a multiple of 65536", stage, p.Name, m)
			}
			for _, cn := range cs {
				if d := cmp.Diff(sb, cn, protocmp.Transform()); d != "" {
					t.Errorf("%s: %s container user namespace differs from its sandbox's (-sandbox +container):\n%s", stage, p.Name, d)
				}
			}
			if old, ok := first[p.UID]; ok && old != m.GetHostId() {
				t.Errorf("%s: %s moved from host ID %d to %d", stage, p.Name, old, m.GetHostId())
			}
			first[p.UID] = m.GetHostId()
		}
		seen := map[uint32]types.UID{}
		for uid, id := range first {
			if other, dup := seen[id]; dup {
				t.Errorf("%s: pods %s and %s share the range at %d", stage, uid, other, id)
			}
			seen[id] = uid
		}
	}
	check("first start")

	h.CrashAgent()
	if err := h.K.RunFor(40 * time.Second); err != nil { // the containers exit meanwhile
		t.Fatal(err)
	}
	h.StartAgent()
	pods = append(pods, mustCreate(t, h, NewPod("u3", h.NodeName, noHostUsers)))
	runChecked(t, h, c, 2*time.Minute)
	for _, p := range pods[:3] {
		if ap, _ := APIPod(h, "default", p.Name); len(ap.Status.ContainerStatuses) != 1 || ap.Status.ContainerStatuses[0].RestartCount == 0 {
			t.Fatalf("%s: statuses %+v; want a restart after the agent's (the test needs a new container)", p.Name, ap.Status.ContainerStatuses)
		}
	}
	check("after the agent restarted")

	gone := pods[0]
	if err := h.API.User().DeletePodGracefully("default", gone.Name, nil); err != nil {
		t.Fatal(err)
	}
	runChecked(t, h, c, 45*time.Second)
	if _, err := h.Files.Stat(path.Join(podspec.PodDir("", gone.UID), "userns")); err == nil {
		t.Errorf("the deleted pod's user namespace checkpoint remains")
	}
}
