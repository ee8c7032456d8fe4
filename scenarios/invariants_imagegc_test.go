package scenarios

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// TestImageGCLRUInvariant removes images by hand (no agent) in an order
// image-gc-lru forbids: busybox, which a container used, before nginx,
// never used. The Checker names it when the use lasted longer than the
// collector's detection period (it must have seen it), and not when the
// container came and went within seconds (between two detections, as a
// pod created and deleted at once: the kubelet's collector misses that use
// too).
func TestImageGCLRUInvariant(t *testing.T) {
	for _, tc := range []struct {
		name string
		use  time.Duration
		want []string
	}{
		{"use the collector saw", 6 * time.Minute, []string{"image-gc-lru"}},
		{"use between two detections", 3 * time.Second, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := harness.New(harness.Config{Seed: 48})
			t.Cleanup(h.Close)
			c := NewChecker(h)
			ctx := context.Background()
			pod := NewPod("web", h.NodeName)
			pod.UID = "uid-web"
			ids := upstreamKubeletRuns(t, h, pod, map[string]string{"app": "a18570d5"})
			if err := RunChecked(h, c, tc.use, 100*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if err := h.Runtime.StopContainer(ctx, ids["app"], 0); err != nil {
				t.Fatal(err)
			}
			if err := h.Runtime.RemoveContainer(ctx, ids["app"]); err != nil {
				t.Fatal(err)
			}
			if err := RunChecked(h, c, 10*time.Second, 100*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			for _, img := range []string{"docker.io/library/busybox:latest", "docker.io/library/nginx:latest"} {
				if err := h.Runtime.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: img}); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(h.Runtime.Removals()); n != 2 {
				t.Fatalf("%d removals, want 2", n)
			}
			c.Check()
			var got []string
			for _, v := range c.Violations() {
				got = append(got, v.Invariant)
			}
			if len(got) != len(tc.want) || len(got) > 0 && got[0] != tc.want[0] {
				t.Errorf("violations = %v, want %v", c.Violations(), tc.want)
			}
		})
	}
}
