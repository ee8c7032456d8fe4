package scenarios

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A container with a startup probe and no readiness probe is shown
// started but not yet ready in one status before it is ready, as the
// kubelet writes it (its status manager records the startup result,
// SetContainerStartup, before the sync that computes readiness:
// kubelet.go syncLoopIteration, prober_manager.go UpdatePodStatus).
func TestFidelityStartupThenReady(t *testing.T) {
	h := start(t, 47)
	writes := watchContainer(h, "slow", "app")
	mustCreate(t, h, NewPod("slow", h.NodeName,
		Env("app", "FAKECRI_EXEC", "boot=1,12s:0"),
		WithProbe("app", StartupProbe, execProbe("boot", 5, 10))))
	if err := h.K.RunFor(40 * time.Second); err != nil {
		t.Fatal(err)
	}
	var seq []string
	for _, w := range *writes {
		s := fmt.Sprintf("started=%s ready=%v", w.Started, w.Ready)
		if len(seq) == 0 || seq[len(seq)-1] != s {
			seq = append(seq, s)
		}
	}
	want := []string{"started=unset ready=false", "started=false ready=false", "started=true ready=false", "started=true ready=true"}
	if diff := cmp.Diff(want, seq); diff != "" {
		t.Errorf("app's distinct written states (-want +got):\n%s", diff)
	}
}
