package fakecri

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
)

// TestTruthViews checks that the shared truth views show what the copying
// ones do, that the generation moves with every change they show (a
// scripted exit included, once its time has come) and only then, and that
// an unchanged runtime hands out the same view again.
func TestTruthViews(t *testing.T) {
	f := newFixture(t)
	same := func(when string) {
		t.Helper()
		if diff := cmp.Diff(f.r.TrueContainers(), f.r.TrueContainersView(), protocmp.Transform()); diff != "" {
			t.Errorf("%s: containers view differs from TrueContainers (-copy +view):\n%s", when, diff)
		}
		if diff := cmp.Diff(f.r.TrueImages(), f.r.TrueImagesView(), protocmp.Transform()); diff != "" {
			t.Errorf("%s: images view differs from TrueImages (-copy +view):\n%s", when, diff)
		}
		if diff := cmp.Diff(f.r.TrueSandboxes(), f.r.TrueSandboxesView(), protocmp.Transform()); diff != "" {
			t.Errorf("%s: sandboxes view differs from TrueSandboxes (-copy +view):\n%s", when, diff)
		}
	}
	gen := f.r.TrueGeneration()
	moved := func(when string, want bool) {
		t.Helper()
		g := f.r.TrueGeneration()
		if got := g != gen; got != want {
			t.Errorf("%s: generation %d → %d, moved %v, want %v", when, gen, g, got, want)
		}
		gen = g
	}
	same("empty")
	sb := f.runPod("a")
	moved("sandbox created", true)
	id := f.create(sb, ctrConfig("app", "FAKECRI_EXIT_AFTER=5s"))
	moved("container created", true)
	same("created")
	if err := f.r.StartContainer(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	moved("container started", true)
	same("running")
	v := f.r.TrueContainersView()
	f.clock.Advance(time.Second)
	moved("a second later, nothing changed", false)
	if w := f.r.TrueContainersView(); &w[0] != &v[0] {
		t.Errorf("unchanged runtime built a new view")
	}
	f.clock.Advance(5 * time.Second)
	moved("the scripted exit came", true)
	same("exited")
	if err := f.r.RemoveContainer(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	moved("container removed", true)
	if err := f.r.StopPodSandbox(f.ctx, sb); err != nil {
		t.Fatal(err)
	}
	moved("sandbox stopped", true)
	same("stopped")
	if err := f.r.RemovePodSandbox(f.ctx, sb); err != nil {
		t.Fatal(err)
	}
	moved("sandbox removed", true)
	same("removed")
	if cfg, ok := f.r.TrueContainerConfigView(id); ok {
		t.Errorf("config of a removed container: %v", cfg)
	}
}

// TestTrueExitedAt checks that the exits listed for an instant are those
// the runtime held then: not a container still running then, nor one
// created after, but one removed since (a garbage-collected instance)
// with its exit.
func TestTrueExitedAt(t *testing.T) {
	f := newFixture(t)
	sb := f.runPod("a")
	first := f.run(sb, ctrConfig("app", "FAKECRI_EXIT_AFTER=5s"))
	f.clock.Advance(2 * time.Second)
	running := f.clock.Now().UnixNano()
	f.clock.Advance(4 * time.Second) // exited at +5s
	exited := f.clock.Now().UnixNano()
	cfg := ctrConfig("app")
	cfg.Metadata.Attempt = 1
	second := f.run(sb, cfg)
	f.clock.Advance(time.Second)
	if err := f.r.RemoveContainer(f.ctx, first); err != nil {
		t.Fatal(err)
	}
	exitsAt := f.r.TrueExitedAt
	if got := exitsAt(running); len(got) != 0 {
		t.Errorf("exits while the first instance ran: %+v, want none", got)
	}
	want := []PastExit{{ID: first, Name: "app", Attempt: 0, Labels: ctrConfig("app").Labels,
		Exit: Exit{Code: 0, Reason: "Completed", FinishedAt: exited - time.Second.Nanoseconds()}}}
	if diff := cmp.Diff(want, exitsAt(exited)); diff != "" {
		t.Errorf("exits when the first instance had exited, since removed (-want +got):\n%s", diff)
	}
	if got := exitsAt(f.clock.Now().UnixNano()); len(got) != 0 {
		t.Errorf("exits now (the first removed, %s running): %+v, want none", second, got)
	}
}
