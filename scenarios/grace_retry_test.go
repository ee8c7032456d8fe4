package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestRetriedKillKeepsGrace: when the runtime fails the StopContainer of
// a deleted pod's kill, the pod worker retries the kill after its
// back-off; the retry does not run the preStop hook again, and stops the
// container with what is left of the grace period counted from the
// delete, not a fresh one (the regression: preStop twice and a SIGKILL
// some 45 s after a delete with grace 30 s). The container ignores
// SIGTERM, so its SIGKILL shows the grace it was given.
func TestRetriedKillKeepsGrace(t *testing.T) {
	const grace = 30
	h := start(t, 47)
	c := NewChecker(h)
	pod := mustCreate(t, h, NewPod("stubborn", h.NodeName, PreStop("app", ExecHook("/bin/drain")), IgnoresSIGTERM("app"), Grace(grace)))
	runUntil(t, h, "the pod running", time.Minute, func() bool { return running(h, pod.UID) == 1 })
	if err := RunChecked(h, c, 2*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := h.Runtime.InjectError("StopContainer", status.Error(codes.Unavailable, "injected StopContainer failure"), 1); err != nil {
		t.Fatal(err)
	}
	if err := h.API.User().DeletePodGracefully("default", pod.Name, nil); err != nil {
		t.Fatal(err)
	}
	deleted := h.K.Elapsed()
	for end := deleted + 2*time.Minute; running(h, pod.UID) > 0; {
		if h.K.Elapsed() >= end {
			t.Fatalf("container still running 2 min after the delete")
		}
		if err := RunChecked(h, c, 100*time.Millisecond, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if h.Runtime.ErrorsPending("StopContainer") {
		t.Fatal("the injected StopContainer failure was never served: the test did not exercise a retry")
	}
	var hooks []time.Duration
	for _, ct := range TrueContainers(h) {
		for _, e := range h.Runtime.TrueExecs(ct.ID) {
			if ct.PodUID == pod.UID && e.Cmd == "/bin/drain" {
				hooks = append(hooks, (c.elapsedAt(e.At) - deleted).Round(time.Second))
			}
		}
	}
	if len(hooks) != 1 {
		t.Errorf("preStop hook ran %d times (at %v after the delete), want once", len(hooks), hooks)
	}
	insts := instancesOf(h, c, pod.UID, "app")
	if len(insts) != 1 {
		t.Fatalf("%d instances, want 1", len(insts))
	}
	it := insts[0]
	// SIGKILL at the end of the grace counted from the delete: up to 1 s
	// later for the watch and the relist the kill waits for, and the
	// whole seconds a retry is given.
	killed := it.Finished - deleted
	if killed < (grace-1)*time.Second || killed > (grace+2)*time.Second {
		t.Errorf("SIGKILL %v after the delete, want the grace of %ds (within 2 s)", killed, grace)
	}
	if diff := cmp.Diff(int32(137), it.Code); diff != "" {
		t.Errorf("exit code (-want +got):\n%s", diff)
	}
	reportViolations(t, c)
}
