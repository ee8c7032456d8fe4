package scenarios

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// podWrites records the distinct states the agent writes for pod name,
// each as "<phase> sandbox=<PodReadyToStartContainers>
// <container's state> r<restartCount>" (repeats of the same state are
// folded).
func podWrites(h *harness.Harness, name, container string) *[]string {
	var out []string
	h.API.OnWrite(func(r apiserver.Record) {
		if r.Kind != apiserver.KindPod || r.Pod == nil || r.Pod.Name != name || len(r.Pod.Status.Conditions) == 0 {
			return // not the agent's write
		}
		sandbox := "unset"
		for _, c := range r.Pod.Status.Conditions {
			if c.Type == corev1.PodReadyToStartContainers {
				sandbox = string(c.Status)
			}
		}
		state := "none"
		for _, cs := range r.Pod.Status.ContainerStatuses {
			if cs.Name != container {
				continue
			}
			switch {
			case cs.State.Waiting != nil:
				state = "waiting:" + cs.State.Waiting.Reason
			case cs.State.Running != nil:
				state = "running"
			case cs.State.Terminated != nil:
				state = "terminated:" + cs.State.Terminated.Reason
			}
			state += fmt.Sprintf(" r%d", cs.RestartCount)
		}
		s := fmt.Sprintf("%s sandbox=%s %s", r.Pod.Status.Phase, sandbox, state)
		if len(out) == 0 && s == "Pending sandbox=False waiting:ContainerCreating r0" {
			return
		}
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	})
	return &out
}

// TestFidelitySandboxReadyBeforeTheImage: once a new pod's sandbox runs
// the status says so (PodReadyToStartContainers True, the container
// still ContainerCreating) while its image is pulled, as the kubelet
// v1.37's OnPodSandboxReady writes it before any pull; then Running. On
// the old build (status set after the sync's actions, from the view
// before them) the pod went from "no sandbox" straight to Running after
// the 20 s pull: issue 27's harness, cause S1 (in 66 of its rows).
func TestFidelitySandboxReadyBeforeTheImage(t *testing.T) {
	const image = "example.com/slow:v1"
	h, c := imageHarness(t, 2707, 1, fakecri.Image{Ref: image, Size: 10 << 20, PullLatency: 20 * time.Second})
	writes := podWrites(h, "slow", "app")
	mustCreate(t, h, NewPod("slow", h.NodeName, Image("app", image, corev1.PullIfNotPresent)))
	checked(t, h, c, 10*time.Second)
	got := "(only the first sync's status)"
	if n := len(*writes); n > 0 {
		got = (*writes)[n-1]
	}
	if want := "Pending sandbox=True waiting:ContainerCreating r0"; got != want {
		t.Errorf("status while the image is pulled: %q, want %q (every write: %q)", got, want, *writes)
	}
	checked(t, h, c, 30*time.Second)
	want := []string{
		"Pending sandbox=True waiting:ContainerCreating r0",
		"Running sandbox=True running r0",
	}
	if diff := cmp.Diff(want, *writes); diff != "" {
		t.Errorf("distinct states written (-want +got):\n%s", diff)
	}
}

// TestFidelityCrashLoopStatusAsUpstream: the status of a crash-looping
// container is the kubelet's, set at the start of each sync with the
// reasons the previous sync left: each exit shows as terminated (Error)
// while the container waits out its back-off, and CrashLoopBackOff (with
// the back-off the previous sync found) at the sync that restarts it, as
// the upstream kubelet v1.37.2 wrote them in issue 27's harness
// (`crash-exit1`); the first exit is restarted at once. The old build
// showed CrashLoopBackOff right after each exit and never the exit
// itself.
func TestFidelityCrashLoopStatusAsUpstream(t *testing.T) {
	h := start(t, 2708)
	c := NewChecker(h)
	writes := podWrites(h, "crash", "app")
	mustCreate(t, h, NewPod("crash", h.NodeName, Exits("app", 5*time.Second, 1)))
	checked(t, h, c, 48*time.Second)
	want := []string{
		"Pending sandbox=True waiting:ContainerCreating r0",
		"Running sandbox=True running r0",
		"Running sandbox=True terminated:Error r0", // restarted in the same sync
		"Running sandbox=True running r1",
		"Running sandbox=True terminated:Error r1", // 10 s back-off
		"Running sandbox=True waiting:CrashLoopBackOff r1",
		"Running sandbox=True running r2",
		"Running sandbox=True terminated:Error r2", // 20 s back-off
		"Running sandbox=True waiting:CrashLoopBackOff r2",
		"Running sandbox=True running r3",
	}
	if diff := cmp.Diff(want, *writes); diff != "" {
		t.Errorf("distinct states written (-want +got):\n%s", diff)
	}
}
