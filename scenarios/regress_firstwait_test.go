//go:build regress_firstwait

package scenarios

import (
	"strings"
	"testing"
	"time"
)

// TestRegressionFirstWait: built with regress_firstwait, the crash-loop
// back-off is lockstep's earlier curve, one step behind the kubelet's
// (the first exit waits 10 s, then 20 s, …: issue 27, B1). A container
// that exits every 2 s breaks backoff-respected at its first restart (10
// s after the exit, where the kubelet restarts at once) and again at the
// second (20 s where it waits 10 s).
func TestRegressionFirstWait(t *testing.T) {
	h := start(t, 27)
	c := NewChecker(h)
	mustCreate(t, h, NewPod("crash", h.NodeName, Exits("app", 2*time.Second, 1)))
	if err := RunChecked(h, c, 45*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var late []string
	for _, v := range c.Violations() {
		if v.Invariant != "backoff-respected" {
			t.Errorf("unexpected violation %v", v)
			continue
		}
		late = append(late, v.Detail)
	}
	if len(late) < 2 || !strings.Contains(late[0], "(attempt 1) restarted 10") || !strings.Contains(late[0], "after its 0s crash-loop back-off ended") ||
		!strings.Contains(late[1], "(attempt 2) restarted 20") || !strings.Contains(late[1], "after its 10s crash-loop back-off ended") {
		t.Fatalf("backoff-respected reports %q; want the first restart late after a 0 s back-off and the second after 10 s", late)
	}
}
