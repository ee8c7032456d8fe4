package scenarios

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// running counts the pod's running containers in the runtime's truth.
func running(h *harness.Harness, uid types.UID) int {
	n := 0
	for _, c := range TrueContainers(h) {
		if c.PodUID == uid && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			n++
		}
	}
	return n
}

// deleteThenShorten deletes the running pod "slow" (it ignores SIGTERM)
// with grace 120 s, waits 10 s, deletes it again with second, and returns
// how long after the second delete its containers ran.
func deleteThenShorten(t *testing.T, seed uint64, second int64) time.Duration {
	t.Helper()
	h := start(t, seed)
	pod := mustCreate(t, h, NewPod("slow", h.NodeName, IgnoresSIGTERM("app"), IgnoresSIGTERM("sidecar"), Grace(300)))
	runUntil(t, h, "pod running", time.Minute, func() bool { return running(h, pod.UID) == 2 })
	long := int64(120)
	if err := h.API.User().DeletePodGracefully("default", "slow", &long); err != nil {
		t.Fatal(err)
	}
	if err := h.K.RunFor(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if n := running(h, pod.UID); n != 2 {
		t.Fatalf("%d containers running 10 s into a 120 s grace period, want 2 (they ignore SIGTERM)", n)
	}
	if err := h.API.User().DeletePodGracefully("default", "slow", &second); err != nil {
		t.Fatal(err)
	}
	began := h.K.Elapsed()
	runUntil(t, h, "containers stopped", 3*time.Minute, func() bool { return running(h, pod.UID) == 0 })
	return h.K.Elapsed() - began
}

// TestShortenedGraceStopsSooner: a second delete with a shorter grace
// period cuts the termination in flight short, as the kubelet does (the
// kill is cancelled and redone with the shorter grace).
func TestShortenedGraceStopsSooner(t *testing.T) {
	// The grace of 5 s from the first request has run out 10 s in: the
	// apiserver makes it 1 s, and a stop takes at least 2 s.
	if took := deleteThenShorten(t, 21, 5); took > 6*time.Second {
		t.Errorf("containers ran %v after the grace was cut to 5 s, want at most 6 s", took)
	}
}

// TestForceDeleteStopsAtOnce: a forced delete (grace 0) during a long
// graceful termination removes the pod from the API at once; the node
// stops its containers within the minimal stop time.
func TestForceDeleteStopsAtOnce(t *testing.T) {
	if took := deleteThenShorten(t, 22, 0); took > 5*time.Second {
		t.Errorf("containers ran %v after a forced delete, want at most 5 s", took)
	}
}

// TestForceDeleteDuringContainerKill: a forced delete while the agent is
// killing a container for a spec change (a long grace, SIGTERM ignored)
// stops the pod at once: the kill's runtime call returns when the sync is
// cancelled, as a gRPC call does, instead of holding the worker for the
// whole grace period.
func TestForceDeleteDuringContainerKill(t *testing.T) {
	h := start(t, 23)
	pod := mustCreate(t, h, NewPod("slow", h.NodeName, IgnoresSIGTERM("app"), Grace(120)))
	runUntil(t, h, "pod running", time.Minute, func() bool { return running(h, pod.UID) == 1 })
	if _, err := h.API.User().UpdatePodSpec("default", "slow", func(s *corev1.PodSpec) { s.Containers[0].Image = "busybox:1.37" }); err != nil {
		t.Fatal(err)
	}
	if err := h.K.RunFor(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	if err := h.API.User().DeletePodGracefully("default", "slow", &zero); err != nil {
		t.Fatal(err)
	}
	began := h.K.Elapsed()
	runUntil(t, h, "containers stopped", 3*time.Minute, func() bool { return running(h, pod.UID) == 0 })
	if took := h.K.Elapsed() - began; took > 5*time.Second {
		t.Errorf("containers ran %v after a forced delete, want at most 5 s", took)
	}
}
