package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/agent"
	"github.com/lockstep-dev/lockstep/node/images"
	"github.com/lockstep-dev/lockstep/node/runtimesync"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// imageHarness starts an agent over a runtime whose registry holds
// registry; parallel is images.Config.ParallelPulls. The checker runs
// after every step.
func imageHarness(t *testing.T, seed uint64, parallel int, registry ...fakecri.Image) (*harness.Harness, *Checker) {
	t.Helper()
	h := harness.New(harness.Config{
		Seed:    seed,
		Replay:  func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) },
		Runtime: fakecri.Config{Registry: registry, PullLatency: time.Second},
		Agent:   agent.Config{RuntimeSync: runtimesync.Config{Images: images.Config{ParallelPulls: parallel}}},
	})
	t.Cleanup(h.Close)
	c := NewChecker(h)
	h.StartAgent()
	return h, c
}

// checkUntil runs the checker after every step until cond holds.
func checkUntil(t *testing.T, h *harness.Harness, c *Checker, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	runUntil(t, h, what, limit, func() bool { c.Check(); return cond() })
	for _, v := range c.Violations() {
		t.Errorf("violation: %v", v)
	}
}

// pullsOf lists the pulls of a pod, as "+<start>-+<end> user ok|error".
func pullsOf(h *harness.Harness, uid types.UID) []fakecri.Pull {
	var out []fakecri.Pull
	for _, p := range h.Runtime.Pulls() {
		if p.PodUID == string(uid) {
			out = append(out, p)
		}
	}
	return out
}

// TestImagePullBackOff: an image whose first four pulls fail (a registry
// outage) leaves its container in ErrImagePull, then ImagePullBackOff with
// the last error; the retries come 10, 20, 40, 80 s after each failure
// (per pod and image), give or take the pod worker's retry period, each failure records Failed and BackOff events, and
// once the registry answers the pod runs, with a Pulled event giving the
// pull's time.
func TestImagePullBackOff(t *testing.T) {
	const image = "example.com/flaky:v1"
	h, c := imageHarness(t, 11, 0, fakecri.Image{Ref: image, Size: 5 << 20})
	if err := h.Runtime.FailPull(image, "503 Service Unavailable", 4); err != nil {
		t.Fatal(err)
	}
	p := mustCreate(t, h, NewPod("flaky", h.NodeName, Image("app", image, corev1.PullAlways)))
	seen := map[string]bool{}
	var backoffMsg string
	checkUntil(t, h, c, "flaky Running", 5*time.Minute, func() bool {
		if r, msg := waitingReason(h, "flaky"); r != "" {
			seen[r] = true
			if r == "ImagePullBackOff" {
				backoffMsg = msg
			}
		}
		return PodIs(h, "default", "flaky", corev1.PodRunning, true)
	})
	if !seen["ErrImagePull"] || !seen["ImagePullBackOff"] {
		t.Errorf("waiting reasons seen %v; want ErrImagePull and ImagePullBackOff", seen)
	}
	wantMsg := `Back-off pulling image "example.com/flaky:v1": ErrImagePull: failed to pull and unpack image "example.com/flaky:v1": 503 Service Unavailable`
	if backoffMsg != wantMsg {
		t.Errorf("ImagePullBackOff message\n got %q\nwant %q", backoffMsg, wantMsg)
	}
	pulls := pullsOf(h, p.UID)
	if len(pulls) != 5 {
		t.Fatalf("%d pulls, want 4 failed and 1 good: %+v", len(pulls), pulls)
	}
	for i := 1; i < len(pulls); i++ {
		want := 10 * time.Second << (i - 1)
		if gap := pulls[i].Start.Sub(pulls[i-1].End); gap < want || gap > want+15*time.Second {
			t.Errorf("pull %d started %v after the failure before it; want %v (+ at most the worker's 10-15 s retry)", i, gap, want)
		}
	}
	ev := eventsAbout(h, "default", "flaky")
	for _, want := range []string{
		`Normal Pulling: Pulling image "example.com/flaky:v1"`,
		`Warning Failed: Failed to pull image "example.com/flaky:v1": failed to pull and unpack image "example.com/flaky:v1": 503 Service Unavailable`,
		`Warning Failed: Error: ErrImagePull`,
		`Normal BackOff: Back-off pulling image "example.com/flaky:v1"`,
		`Warning Failed: Error: ImagePullBackOff`,
		`Normal Pulled: Successfully pulled image "example.com/flaky:v1" in 1s (1s including waiting). Image size: 5242880 bytes.`,
	} {
		if !slices.Contains(ev, want) {
			t.Errorf("no event %q; events:\n%s", want, strings.Join(ev, "\n"))
		}
	}
}

// TestPrivateImage: an image whose registry requires credentials pulls
// for a pod whose imagePullSecrets hold them (the runtime gets them as the
// AuthConfig, after a wrong secret's are tried first), and ends in
// ImagePullBackOff for a pod without them or with the wrong ones.
func TestPrivateImage(t *testing.T) {
	const image = "registry.example.com:5000/team/private:v1"
	h, c := imageHarness(t, 12, 0, fakecri.Image{Ref: image, Size: 1 << 20, Username: "alice", Password: "s3cret"})
	u := h.API.User()
	u.PutSecret(RegistrySecret("regcred", "registry.example.com:5000", "alice", "s3cret"))
	u.PutSecret(RegistrySecret("wrong", "https://registry.example.com:5000/v2/team", "alice", "guess"))
	u.PutSecret(RegistrySecret("elsewhere", "quay.io", "alice", "s3cret"))
	with := mustCreate(t, h, NewPod("with-secret", h.NodeName, Image("app", image, corev1.PullIfNotPresent), PullSecrets("wrong", "regcred")))
	without := mustCreate(t, h, NewPod("without-secret", h.NodeName, Image("app", image, corev1.PullAlways)))
	other := mustCreate(t, h, NewPod("other-registry", h.NodeName, Image("app", image, corev1.PullAlways), PullSecrets("elsewhere", "missing")))
	checkUntil(t, h, c, "with-secret Running, the others in ImagePullBackOff", 2*time.Minute, func() bool {
		r1, _ := waitingReason(h, "without-secret")
		r2, _ := waitingReason(h, "other-registry")
		return PodIs(h, "default", "with-secret", corev1.PodRunning, true) && r1 == "ImagePullBackOff" && r2 == "ImagePullBackOff"
	})
	checkFor(t, h, c, time.Minute)
	if r, _ := waitingReason(h, "without-secret"); r != "ImagePullBackOff" && r != "ErrImagePull" {
		t.Errorf("without-secret: waiting %q a minute later", r)
	}
	auths := func(uid types.UID) []string {
		var out []string
		for _, p := range pullsOf(h, uid) {
			ok := "ok"
			if p.Err != "" {
				ok = "401"
				if !strings.Contains(p.Err, "401 Unauthorized") {
					ok = p.Err
				}
			}
			out = append(out, p.Username+":"+p.Password+" "+ok)
		}
		return out
	}
	if got, want := auths(with.UID), []string{"alice:guess 401", "alice:s3cret ok"}; !slices.Equal(got, want) {
		t.Errorf("with-secret pulls %q, want %q (the more specific key's credential first)", got, want)
	}
	for _, pod := range []*corev1.Pod{without, other} {
		got := auths(pod.UID)
		if len(got) < 2 || slices.ContainsFunc(got, func(s string) bool { return s != ": 401" }) {
			t.Errorf("%s pulls %q: want at least two anonymous 401s", pod.Name, got)
		}
	}
	if ev := eventsAbout(h, "default", "without-secret"); !hasEvent(ev, "Warning Failed: Failed to pull image", "401 Unauthorized") {
		t.Errorf("without-secret: no Failed event naming 401; events:\n%s", strings.Join(ev, "\n"))
	}
}

// checkFor runs d more of virtual time, checking after every step.
func checkFor(t *testing.T, h *harness.Harness, c *Checker, d time.Duration) {
	t.Helper()
	end := h.K.Elapsed() + d
	checkUntil(t, h, c, fmt.Sprintf("%v more", d), d+time.Second, func() bool { return h.K.Elapsed() >= end })
}

// TestNeverPullMissingImage: with pull policy Never an absent image is
// ErrImageNeverPull with upstream's message and event, and nothing is
// pulled; a present one runs under Never.
func TestNeverPullMissingImage(t *testing.T) {
	h, c := imageHarness(t, 13, 0)
	missing := mustCreate(t, h, NewPod("never-missing", h.NodeName, Image("app", "example.com/absent:v1", corev1.PullNever)))
	mustCreate(t, h, NewPod("never-present", h.NodeName, Image("app", "busybox:latest", corev1.PullNever)))
	checkUntil(t, h, c, "never-present Running, never-missing ErrImageNeverPull", time.Minute, func() bool {
		r, _ := waitingReason(h, "never-missing")
		return PodIs(h, "default", "never-present", corev1.PodRunning, true) && r == "ErrImageNeverPull"
	})
	checkFor(t, h, c, time.Minute)
	const msg = `Container image "example.com/absent:v1" is not present with pull policy of Never`
	if r, m := waitingReason(h, "never-missing"); r != "ErrImageNeverPull" || m != msg {
		t.Errorf("never-missing waits %q %q; want ErrImageNeverPull %q", r, m, msg)
	}
	if p, _ := APIPod(h, "default", "never-missing"); p.Status.Phase != corev1.PodPending {
		t.Errorf("never-missing phase %s, want Pending", p.Status.Phase)
	}
	if ev := eventsAbout(h, "default", "never-missing"); !slices.Contains(ev, "Warning ErrImageNeverPull: "+msg) {
		t.Errorf("no ErrImageNeverPull event; events:\n%s", strings.Join(ev, "\n"))
	}
	if n := len(h.Runtime.Pulls()); n != 0 {
		t.Errorf("%d pulls; pull policy Never pulls nothing", n)
	}
	_ = missing
}

// TestSerializedAndParallelPulls: four pods whose images take 20 s each to
// pull. Serialized (the default) the pulls never overlap and the last pod
// waits for the three others (its Pulled event says 20s, 80s including
// waiting); with --serialize-image-pulls=false and
// --max-parallel-image-pulls=2 two run at a time; without a limit all four
// overlap.
func TestSerializedAndParallelPulls(t *testing.T) {
	for _, tc := range []struct {
		name     string
		parallel int
		want     int // most pulls at once
	}{{"serialized", 0, 1}, {"max-2", 2, 2}, {"unlimited", -1, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			var reg []fakecri.Image
			for i := range 4 {
				reg = append(reg, fakecri.Image{Ref: fmt.Sprintf("example.com/big%d:v1", i), Size: 100 << 20, PullLatency: 20 * time.Second})
			}
			h, c := imageHarness(t, 14, tc.parallel, reg...)
			for i := range 4 {
				mustCreate(t, h, NewPod(fmt.Sprintf("big%d", i), h.NodeName, Image("app", fmt.Sprintf("example.com/big%d:v1", i), corev1.PullIfNotPresent)))
			}
			checkUntil(t, h, c, "all four Running", 3*time.Minute, func() bool {
				for i := range 4 {
					if !PodIs(h, "default", fmt.Sprintf("big%d", i), corev1.PodRunning, true) {
						return false
					}
				}
				return true
			})
			pulls := h.Runtime.Pulls()
			most := 0
			for _, p := range pulls {
				n := 0
				for _, q := range pulls {
					if !q.Start.After(p.Start) && q.End.After(p.Start) {
						n++
					}
				}
				most = max(most, n)
			}
			if len(pulls) != 4 || most != tc.want {
				t.Errorf("%d pulls, at most %d at once; want 4, %d at once", len(pulls), most, tc.want)
			}
			var waits []string
			for i := range 4 {
				for _, e := range eventsAbout(h, "default", fmt.Sprintf("big%d", i)) {
					if _, m, ok := strings.Cut(e, "Normal Pulled: Successfully pulled image"); ok {
						_, d, _ := strings.Cut(m, ":v1\" in ")
						waits = append(waits, strings.TrimSuffix(d, ". Image size: 104857600 bytes."))
					}
				}
			}
			slices.Sort(waits)
			want := map[int][]string{
				1: {"20s (20s including waiting)", "20s (40s including waiting)", "20s (1m0s including waiting)", "20s (1m20s including waiting)"},
				2: {"20s (20s including waiting)", "20s (20s including waiting)", "20s (40s including waiting)", "20s (40s including waiting)"},
				4: {"20s (20s including waiting)", "20s (20s including waiting)", "20s (20s including waiting)", "20s (20s including waiting)"},
			}[tc.want]
			slices.Sort(want)
			if !slices.Equal(waits, want) {
				t.Errorf("Pulled events say %q, want %q", waits, want)
			}
		})
	}
}
