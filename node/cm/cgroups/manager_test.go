package cgroups

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// fakeTree records the port calls and keeps the tree.
type fakeTree struct {
	nodes map[string]deps.CgroupResources
	calls []string
	busy  map[string]bool
}

func (f *fakeTree) Ensure(p string, r deps.CgroupResources) error {
	f.calls = append(f.calls, "ensure "+p)
	f.nodes[p] = r
	return nil
}

func (f *fakeTree) Remove(p string) error {
	if _, ok := f.nodes[p]; !ok {
		return nil
	}
	if f.busy[p] {
		return &busyError{p}
	}
	f.calls = append(f.calls, "remove "+p)
	delete(f.nodes, p)
	return nil
}

func (f *fakeTree) List(p string) ([]string, error) {
	var out []string
	for k := range f.nodes {
		if rest, ok := strings.CutPrefix(k, p+"/"); ok && !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	slices.Sort(out)
	return out, nil
}

type busyError struct{ p string }

func (e *busyError) Error() string { return e.p + ": device or resource busy" }

func newTestManager(cfg Config) (*Manager, *fakeTree) {
	f := &fakeTree{nodes: map[string]deps.CgroupResources{}, busy: map[string]bool{}}
	core := deps.Core{Log: slog.New(slog.DiscardHandler)}
	node := Node{Capacity: rl("cpu", "4", "memory", "8Gi"), Allocatable: rl("cpu", "3500m", "memory", "7Gi")}
	return New(core, f, cfg, node), f
}

func TestManagerLifecycle(t *testing.T) {
	m, f := newTestManager(Config{CgroupsPerQOS: true, Root: "/", EnforcePods: true})
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if got := *f.nodes["/kubepods"].Memory; got != 7<<30 {
		t.Errorf("kubepods memory limit %d, want allocatable 7Gi", got)
	}
	b := podOf(ctr(rl("cpu", "300m"), nil))
	b.UID = "b1"
	active := []*corev1.Pod{b}
	f.calls = nil
	if err := m.EnsurePod(b, corev1.PodQOSBurstable, func() []*corev1.Pod { return active }); err != nil {
		t.Fatal(err)
	}
	if err := m.EnsurePod(b, corev1.PodQOSBurstable, func() []*corev1.Pod { return active }); err != nil {
		t.Fatal(err)
	}
	want := []string{"ensure /kubepods/burstable", "ensure /kubepods/besteffort", "ensure /kubepods/burstable/podb1"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got), the second EnsurePod writing nothing:\n%s", diff)
	}
	if s := *f.nodes["/kubepods/burstable"].CPUShares; s != 307 {
		t.Errorf("burstable shares %d, want 307 for 300m", s)
	}
	if got := m.CgroupParent(b, corev1.PodQOSBurstable); got != "/kubepods/burstable/podb1" {
		t.Errorf("CgroupParent = %q", got)
	}
	// A pod cgroup left by an earlier agent, and one still busy.
	_ = f.Ensure("/kubepods/podgone", deps.CgroupResources{})
	_ = f.Ensure("/kubepods/besteffort/podbusy", deps.CgroupResources{})
	f.busy["/kubepods/besteffort/podbusy"] = true
	found, _ := m.PodCgroups()
	if diff := cmp.Diff(map[types.UID]string{"b1": "/kubepods/burstable/podb1", "gone": "/kubepods/podgone", "busy": "/kubepods/besteffort/podbusy"}, found); diff != "" {
		t.Errorf("PodCgroups (-want +got):\n%s", diff)
	}
	removed, err := m.RemoveOrphans(func(uid types.UID) bool { return uid == "b1" })
	if diff := cmp.Diff([]types.UID{"gone"}, removed); diff != "" || err == nil {
		t.Errorf("RemoveOrphans removed %v (-want +got %s), err %v; want gone removed and busy's error", removed, diff, err)
	}
	f.calls = nil
	if err := m.UpdateQOS(active); err != nil || len(f.calls) != 0 {
		t.Errorf("UpdateQOS with nothing changed: %v, calls %v", err, f.calls)
	}
	if err := m.RemovePod("b1"); err != nil {
		t.Fatal(err)
	}
	if err := m.UpdateQOS(nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.nodes["/kubepods/burstable/podb1"]; ok {
		t.Error("RemovePod left the pod cgroup")
	}
	if s := *f.nodes["/kubepods/burstable"].CPUShares; s != 2 {
		t.Errorf("burstable shares %d with no pods, want 2", s)
	}
}

func TestManagerOff(t *testing.T) {
	m, f := newTestManager(Config{CgroupsPerQOS: false, Root: "/"})
	pod := podOf(ctr(nil, nil))
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if err := m.EnsurePod(pod, corev1.PodQOSBestEffort, func() []*corev1.Pod { return nil }); err != nil {
		t.Fatal(err)
	}
	if m.CgroupParent(pod, corev1.PodQOSBestEffort) != "" || len(f.calls) != 0 {
		t.Errorf("a manager that is off gave parent %q and made calls %v", m.CgroupParent(pod, corev1.PodQOSBestEffort), f.calls)
	}
	var nilManager *Manager
	if nilManager.Enabled() {
		t.Error("nil manager enabled")
	}
}

func TestManagerSystemdNames(t *testing.T) {
	m, f := newTestManager(Config{CgroupsPerQOS: true, Root: "/", Driver: DriverSystemd})
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	g := podOf(ctr(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi")))
	g.UID = "ab-cd"
	if err := m.EnsurePod(g, corev1.PodQOSGuaranteed, func() []*corev1.Pod { return []*corev1.Pod{g} }); err != nil {
		t.Fatal(err)
	}
	want := "/kubepods.slice/kubepods-podab_cd.slice"
	if _, ok := f.nodes[want]; !ok {
		t.Errorf("no %s in %v", want, f.calls)
	}
	found, _ := m.PodCgroups()
	if found["ab-cd"] != want {
		t.Errorf("PodCgroups = %v, want ab-cd at %s", found, want)
	}
}

// TestManagerResizePod: a resize grows the pod cgroup's raised limits
// first (keeping the ones it lowers) and sets the final ones after; a pod
// whose cgroup was never ensured is left alone.
func TestManagerResizePod(t *testing.T) {
	m, f := newTestManager(Config{CgroupsPerQOS: true, Root: "/", EnforcePods: true})
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	old := podOf(ctr(rl("cpu", "500m", "memory", "256Mi"), rl("cpu", "1", "memory", "512Mi")))
	old.UID = "r1"
	if err := m.EnsurePod(old, corev1.PodQOSBurstable, func() []*corev1.Pod { return []*corev1.Pod{old} }); err != nil {
		t.Fatal(err)
	}
	// cpu up, memory down
	next := podOf(ctr(rl("cpu", "1", "memory", "128Mi"), rl("cpu", "2", "memory", "256Mi")))
	next.UID = "r1"
	if err := m.GrowPod(next, corev1.PodQOSBurstable); err != nil {
		t.Fatal(err)
	}
	got := f.nodes["/kubepods/burstable/podr1"]
	if *got.CPUQuota != 200000 || *got.CPUShares != 1024 || *got.Memory != 512<<20 {
		t.Errorf("after GrowPod: quota %d shares %d memory %d; want 200000, 1024 and the old 512 MiB", *got.CPUQuota, *got.CPUShares, *got.Memory)
	}
	if err := m.SetPod(next, corev1.PodQOSBurstable); err != nil {
		t.Fatal(err)
	}
	if got := f.nodes["/kubepods/burstable/podr1"]; *got.Memory != 256<<20 || *got.CPUQuota != 200000 {
		t.Errorf("after SetPod: memory %d quota %d; want 256 MiB, 200000", *got.Memory, *got.CPUQuota)
	}
	other := podOf(ctr(rl("cpu", "1"), nil))
	other.UID = "never"
	f.calls = nil
	if err := m.GrowPod(other, corev1.PodQOSBurstable); err != nil || len(f.calls) != 0 {
		t.Errorf("GrowPod of a pod without an ensured cgroup: err %v, calls %v; want nothing", err, f.calls)
	}
}
