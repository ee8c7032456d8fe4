package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// podCgroups lists the pod cgroups of the tree by path.
func podCgroups(h *harness.Harness) []string {
	var out []string
	for _, p := range h.Cgroups.Paths() {
		switch p {
		case "/", "/kubepods", "/kubepods/burstable", "/kubepods/besteffort":
			continue
		}
		out = append(out, p)
	}
	return out
}

func shares(t *testing.T, h *harness.Harness, path string) uint64 {
	t.Helper()
	r, ok := h.Cgroups.Get(path)
	if !ok || r.CPUShares == nil {
		t.Fatalf("cgroup %s: exists %v, shares unset", path, ok)
	}
	return *r.CPUShares
}

// TestPodCgroupsFollowPods: pods of the three QoS classes get their
// cgroups under the right parents with their limits, sandboxes go under
// them, Burstable's shares follow its pods, and deleting the pods
// removes their cgroups.
func TestPodCgroupsFollowPods(t *testing.T) {
	h := start(t, 16)
	c := NewChecker(h)
	g := mustCreate(t, h, NewPod("g", h.NodeName, sizedResources("app", 500, 64, 500, 64)))
	b := mustCreate(t, h, NewPod("b", h.NodeName, sizedResources("app", 250, 32, 0, 0), sizedResources("web", 250, 0, 1000, 128)))
	be := mustCreate(t, h, NewPod("be", h.NodeName))
	if err := RunChecked(h, c, 10*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*corev1.Pod{g, b, be} {
		if !PodIs(h, "default", p.Name, corev1.PodRunning, true) {
			t.Fatalf("pod %s not running and ready", p.Name)
		}
	}
	want := []string{"/kubepods/besteffort/pod" + string(be.UID), "/kubepods/burstable/pod" + string(b.UID), "/kubepods/pod" + string(g.UID)}
	if diff := cmp.Diff(sortedStrings(want), podCgroups(h)); diff != "" {
		t.Errorf("pod cgroups (-want +got):\n%s", diff)
	}
	mi := int64(1 << 20)
	quota, period, mem := int64(50000), uint64(100000), 64*mi
	gotG, _ := h.Cgroups.Get("/kubepods/pod" + string(g.UID))
	if diff := cmp.Diff(deps.CgroupResources{CPUShares: ptr(uint64(512)), CPUQuota: &quota, CPUPeriod: &period, Memory: &mem}, gotG,
		cmp.Comparer(func(a, b map[int64]int64) bool { return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b) })); diff != "" {
		t.Errorf("Guaranteed pod cgroup (-want +got):\n%s", diff)
	}
	gotB, _ := h.Cgroups.Get("/kubepods/burstable/pod" + string(b.UID))
	if gotB.CPUQuota != nil || gotB.Memory != nil || *gotB.CPUShares != 512 {
		t.Errorf("Burstable pod cgroup (app has no limits) = shares %v quota %v memory %v, want 512 shares and no quota or memory limit",
			*gotB.CPUShares, gotB.CPUQuota, gotB.Memory)
	}
	if s := shares(t, h, "/kubepods/burstable"); s != 512 {
		t.Errorf("burstable shares = %d with 500m requested, want 512", s)
	}
	if s := shares(t, h, "/kubepods/besteffort"); s != 2 {
		t.Errorf("besteffort shares = %d, want 2", s)
	}
	for _, p := range []*corev1.Pod{g, b, be} {
		if err := h.API.User().DeletePodGracefully("default", p.Name, nil); err != nil {
			t.Fatal(err)
		}
	}
	runUntil(t, h, "pods gone", 2*time.Minute, func() bool {
		_, g1 := APIPod(h, "default", "g")
		_, b1 := APIPod(h, "default", "b")
		_, be1 := APIPod(h, "default", "be")
		return !g1 && !b1 && !be1
	})
	if err := RunChecked(h, c, 10*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := podCgroups(h); len(got) != 0 {
		t.Errorf("pod cgroups left after deletion: %v", got)
	}
	if s := shares(t, h, "/kubepods/burstable"); s != 2 {
		t.Errorf("burstable shares = %d with no Burstable pod left, want 2", s)
	}
	if v := c.Violations(); len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
}

// TestOrphanCgroupRemovedAfterAgentRestart: a pod deleted while the agent
// is down leaves its cgroup behind; the next agent's housekeeping removes
// it once the pod's containers are gone.
func TestOrphanCgroupRemovedAfterAgentRestart(t *testing.T) {
	h := start(t, 17)
	c := NewChecker(h)
	p := mustCreate(t, h, NewPod("b", h.NodeName, sizedResources("app", 100, 16, 0, 0)))
	runUntil(t, h, "pod running", time.Minute, func() bool { return PodIs(h, "default", "b", corev1.PodRunning, true) })
	path := "/kubepods/burstable/pod" + string(p.UID)
	if _, ok := h.Cgroups.Get(path); !ok {
		t.Fatalf("no cgroup %s for the running pod", path)
	}
	h.CrashAgent()
	zero := int64(0)
	if err := h.API.User().DeletePodGracefully("default", "b", &zero); err != nil {
		t.Fatal(err)
	}
	if err := h.K.RunFor(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Cgroups.Get(path); !ok {
		t.Fatalf("cgroup %s vanished with no agent running", path)
	}
	h.StartAgent()
	if err := RunChecked(h, c, 30*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Cgroups.Get(path); ok {
		t.Errorf("orphaned cgroup %s still there 30 s after the agent restarted", path)
	}
	if len(PodContainers(h, p.UID)) != 0 && len(h.Runtime.TrueCgroupUsers(path)) != 0 {
		t.Errorf("pod %s still runs", p.UID)
	}
	if v := c.Violations(); len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
}

// TestCgroupInvariantCatchesViolations: cgroups-match reports a pod
// cgroup with the wrong limits and one that outlives its deleted pod.
func TestCgroupInvariantCatchesViolations(t *testing.T) {
	h := start(t, 18)
	c := NewChecker(h)
	p := mustCreate(t, h, NewPod("g", h.NodeName, sizedResources("app", 500, 64, 500, 64)))
	runUntil(t, h, "pod running", time.Minute, func() bool { return PodIs(h, "default", "g", corev1.PodRunning, true) })
	c.Check()
	if v := c.Violations(); len(v) != 0 {
		t.Fatalf("violations before tampering: %v", v)
	}
	wrong := int64(1 << 30)
	path := "/kubepods/pod" + string(p.UID)
	if err := h.Cgroups.Ensure(path, deps.CgroupResources{Memory: &wrong}); err != nil {
		t.Fatal(err)
	}
	c.Check()
	// A deleted pod's cgroup that cannot be removed (a leaked process).
	be := mustCreate(t, h, NewPod("be", h.NodeName))
	runUntil(t, h, "pod running", time.Minute, func() bool { return PodIs(h, "default", "be", corev1.PodRunning, true) })
	h.Cgroups.FailRemoves(1 << 20)
	if err := h.API.User().DeletePodGracefully("default", "be", nil); err != nil {
		t.Fatal(err)
	}
	if err := RunChecked(h, c, time.Minute, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Cgroups.Get("/kubepods/besteffort/pod" + string(be.UID)); !ok {
		t.Fatal("the cgroup that cannot be removed is gone")
	}
	var got []string
	for _, v := range c.Violations() {
		got = append(got, v.Invariant)
	}
	if len(got) != 2 || got[0] != "cgroups-match" || got[1] != "cgroups-match" {
		t.Errorf("violations = %v, want cgroups-match twice (wrong limits, orphan)", c.Violations())
	}
}

func ptr[T any](v T) *T { return &v }

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
