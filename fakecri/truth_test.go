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
