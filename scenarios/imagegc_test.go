package scenarios

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// TestImageGCRemovesLeastRecentlyUsed: pods of img4 (5 GiB), img5
// (6 GiB) and img0 (1 GiB) stop in that order a few minutes apart while
// img3's pod keeps running, the agent crashes in between (its records
// survive in the state file); when the image filesystem passes 70 % the
// collector frees 60 %'s worth: the never-used images first, then img4
// and img5, and it stops there: img0, used last, stays, as do img3 (in
// use) and the pinned pause image. No invariant is broken on the way.
func TestImageGCRemovesLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	cfg := harness.Config{Seed: 3, Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) }}
	imageGCScenario().Configure(&cfg)
	h := harness.New(cfg)
	t.Cleanup(h.Close)
	c := NewChecker(h)
	h.StartAgent()
	for _, p := range []struct {
		name string
		img  int
	}{{"keep", 3}, {"first", 4}, {"second", 5}, {"last", 0}} {
		if _, err := Create(h, NewPod(p.name, h.NodeName, Image("app", gcImage(p.img), corev1.PullIfNotPresent), Grace(1))); err != nil {
			t.Fatal(err)
		}
	}
	checkUntil(t, h, c, "pods running", time.Minute, func() bool {
		for _, n := range []string{"keep", "first", "second", "last"} {
			if !PodIs(h, "default", n, corev1.PodRunning, true) {
				return false
			}
		}
		return true
	})
	for i, n := range []string{"first", "second", "last"} {
		if err := h.API.User().DeletePodGracefully("default", n, nil); err != nil {
			t.Fatal(err)
		}
		if err := RunChecked(h, c, 2*time.Minute, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			h.CrashAgent()
			h.StartAgent()
		}
	}
	if n := len(h.Runtime.Removals()); n != 0 {
		t.Fatalf("%d images removed below the high threshold", n)
	}
	// 16.07 GiB of images; 54.4 GiB more makes 70.47 % used (71 % as the
	// kubelet rounds): 10.47 GiB to free for 60 %.
	m := h.Runtime.Node()
	h.Runtime.SetNodeDiskUsage(m.NodefsBase, 544<<30/10)
	if err := RunChecked(h, c, 2*time.Minute, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var removed []string
	for _, r := range h.Runtime.Removals() {
		removed = append(removed, r.Tags...)
	}
	want := []string{"docker.io/library/busybox:latest", "docker.io/library/nginx:latest", gcImage(4), gcImage(5)}
	slices.Sort(removed)
	if d := cmp.Diff(want, removed); d != "" {
		t.Errorf("removed images (-want +got):\n%s", d)
	}
	for _, v := range c.Violations() {
		t.Errorf("violation: %v", v)
	}
}
