package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// nonRootImage is a preloaded image whose config names user 1000.
const nonRootImage = "example.com/app:nonroot"

// startWithImages starts a harness whose runtime holds the default images
// and extra ones.
func startWithImages(t *testing.T, seed uint64, extra ...fakecri.Image) *harness.Harness {
	t.Helper()
	h := harness.New(harness.Config{
		Seed:    seed,
		Replay:  func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) },
		Runtime: fakecri.Config{Images: append(fakecri.DefaultImages(), extra...)},
	})
	t.Cleanup(h.Close)
	h.StartAgent()
	return h
}

// waitingReason returns the waiting reason and message of a pod's first
// container in the API ("" when it is not waiting).
func waitingReason(h *harness.Harness, name string) (string, string) {
	p, ok := APIPod(h, "default", name)
	if !ok || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
		return "", ""
	}
	w := p.Status.ContainerStatuses[0].State.Waiting
	return w.Reason, w.Message
}

// TestRunAsNonRootAgainstImageUser: runAsNonRoot is checked against the
// user the image runs as (ImageStatus), as upstream: a pod whose image runs
// as root waits in CreateContainerConfigError with a message saying so and
// no container is ever created for it, while the same request on an image
// whose user is 1000 runs, as user 1000. Before security contexts were
// supported the first pod failed admission instead.
func TestRunAsNonRootAgainstImageUser(t *testing.T) {
	h := startWithImages(t, 133, fakecri.Image{Ref: nonRootImage, Size: 1 << 20, Inodes: 10, User: "1000:1000"})
	yes := true
	nonRoot := func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: &yes} }
	rootPod := mustCreate(t, h, NewPod("root-image", h.NodeName, nonRoot))
	userPod := mustCreate(t, h, NewPod("user-image", h.NodeName, nonRoot, func(p *corev1.Pod) { p.Spec.Containers[0].Image = nonRootImage }))

	runUntil(t, h, "user-image Running", time.Minute, func() bool { return PodIs(h, "default", "user-image", corev1.PodRunning, true) })
	runUntil(t, h, "root-image waits in CreateContainerConfigError", time.Minute, func() bool {
		r, _ := waitingReason(h, "root-image")
		return r == "CreateContainerConfigError"
	})
	if err := h.K.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	if p, _ := APIPod(h, "default", "root-image"); p.Status.Phase != corev1.PodPending {
		t.Errorf("root-image phase %s, want Pending", p.Status.Phase)
	}
	if r, msg := waitingReason(h, "root-image"); r != "CreateContainerConfigError" || !strings.Contains(msg, "runAsNonRoot: the image runs as root") {
		t.Errorf("root-image waits with %q %q; want CreateContainerConfigError saying the image runs as root", r, msg)
	}
	if cs := PodContainers(h, rootPod.UID); len(cs) != 0 {
		t.Errorf("containers were created for root-image: %+v", cs)
	}
	cs := PodContainers(h, userPod.UID)
	if len(cs) != 1 {
		t.Fatalf("user-image containers %+v, want one", cs)
	}
	cfg, _ := h.Runtime.TrueContainerConfig(cs[0].ID)
	if d := cmp.Diff(&runtimeapi.Int64Value{Value: 1000}, cfg.GetLinux().GetSecurityContext().GetRunAsUser(), protocmp.Transform()); d != "" {
		t.Errorf("user-image runs as (-want +got):\n%s", d)
	}
	if ev := eventsAbout(h, "default", "root-image"); !hasEvent(ev, "Warning Failed: ", "runAsNonRoot") {
		t.Errorf("no Warning Failed event about runAsNonRoot for root-image; events: %q", ev)
	}
}

// TestSecurityContextReachesRuntime: a pod's and its container's security
// contexts, merged, reach the runtime's container config: users, groups
// (fsGroup first), read-only root, no new privileges, dropped capabilities
// and RuntimeDefault seccomp; the sandbox gets the pod-level part.
func TestSecurityContextReachesRuntime(t *testing.T) {
	h := start(t, 134)
	no, yes := false, true
	uid, gid, fsg := int64(1234), int64(2345), int64(3456)
	pod := mustCreate(t, h, NewPod("hardened", h.NodeName, func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &gid, FSGroup: &fsg, SupplementalGroups: []int64{7}}
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
			ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no, RunAsNonRoot: &yes,
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
	}))
	runUntil(t, h, "hardened Running", time.Minute, func() bool { return PodIs(h, "default", "hardened", corev1.PodRunning, true) })
	cs := PodContainers(h, pod.UID)
	if len(cs) != 1 {
		t.Fatalf("containers %+v, want one", cs)
	}
	cfg, _ := h.Runtime.TrueContainerConfig(cs[0].ID)
	sc := cfg.GetLinux().GetSecurityContext()
	got := &runtimeapi.LinuxContainerSecurityContext{
		RunAsUser: sc.GetRunAsUser(), RunAsGroup: sc.GetRunAsGroup(), SupplementalGroups: sc.GetSupplementalGroups(),
		ReadonlyRootfs: sc.GetReadonlyRootfs(), NoNewPrivs: sc.GetNoNewPrivs(), Capabilities: sc.GetCapabilities(), Seccomp: sc.GetSeccomp(),
	}
	want := &runtimeapi.LinuxContainerSecurityContext{
		RunAsUser: &runtimeapi.Int64Value{Value: uid}, RunAsGroup: &runtimeapi.Int64Value{Value: gid}, SupplementalGroups: []int64{fsg, 7},
		ReadonlyRootfs: true, NoNewPrivs: true,
		Capabilities: &runtimeapi.Capability{AddCapabilities: []string{}, DropCapabilities: []string{"NET_RAW"}},
		Seccomp:      &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Errorf("container security context (-want +got):\n%s", d)
	}
}
