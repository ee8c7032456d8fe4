package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestRetriedKillGetsTheGraceAgain: when the runtime fails the
// StopContainer of a deleted pod's kill (before any SIGTERM), the pod
// worker retries the kill after its back-off; the retry does not run the
// preStop hook again, and stops the container with the whole grace period
// again, as the kubelet's retried SyncTerminatingPod does (a grace counted
// from the delete would leave the container, SIGTERMed for the first time
// at the retry, little or nothing of it: sigterm-first caught that on
// runtime-faults seed 2). The container ignores SIGTERM, so its SIGKILL
// shows the grace it was given.
func TestRetriedKillGetsTheGraceAgain(t *testing.T) {
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
	// As the scenarios' cri-error does: the grace counts from the retry.
	c.RuntimeImpairedWhile(func() bool { return h.Runtime.ErrorsPending("StopContainer") })
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
	// The first SIGTERM comes with the retry (the failed call delivered
	// none), after the pod worker's back-off: 10 s jittered by up to half,
	// and the sync loop's tick.
	retry := it.Term - deleted
	if retry < 5*time.Second || retry > 17*time.Second {
		t.Errorf("first SIGTERM %v after the delete, want the retry's, 5 to 17 s after", retry)
	}
	// SIGKILL the whole grace after that SIGTERM.
	if given := it.Finished - it.Term; given != grace*time.Second {
		t.Errorf("SIGKILL %v after the retry's SIGTERM, want the whole grace of %ds", given, grace)
	}
	if diff := cmp.Diff(int32(137), it.Code); diff != "" {
		t.Errorf("exit code (-want +got):\n%s", diff)
	}
	reportViolations(t, c)
}
