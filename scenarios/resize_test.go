package scenarios

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/allocation"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// appInstances lists pod uid's "app" instances in the runtime's truth.
func appInstances(h *harness.Harness, uid types.UID) []RuntimeContainer {
	var out []RuntimeContainer
	for _, c := range TrueContainers(h) {
		if c.PodUID == uid && c.Name == "app" {
			out = append(out, c)
		}
	}
	return out
}

// runningApp is pod uid's running "app" instance ("" : none).
func runningApp(h *harness.Harness, uid types.UID) string {
	for _, c := range appInstances(h, uid) {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return c.ID
		}
	}
	return ""
}

// resizeSettledFor reports whether the API pod shows no resize condition
// and its app container's status resources match the spec's limits.
func resizeSettledFor(h *harness.Harness, name string) bool {
	p, ok := APIPod(h, "default", name)
	if !ok || hasCondition(p, corev1.PodResizePending) || hasCondition(p, corev1.PodResizeInProgress) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "app" && cs.State.Running != nil && cs.Resources != nil {
			return sameQuantities(cs.Resources.Limits, p.Spec.Containers[0].Resources.Limits)
		}
	}
	return false
}

// quantityCmp compares quantities by amount.
var quantityCmp = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func resize(t *testing.T, h *harness.Harness, name string, level int) {
	t.Helper()
	if _, err := h.API.User().ResizePod("default", name, map[string]corev1.ResourceRequirements{"app": ResizeLevel(level)}); err != nil {
		t.Fatalf("resize %s to level %d: %v", name, level, err)
	}
}

func eventReasons(h *harness.Harness, name string) []string {
	var out []string
	for _, e := range h.API.User().Events() {
		if e.Object.Name == name && strings.HasPrefix(e.Reason, "Resize") {
			out = append(out, e.Reason)
		}
	}
	return out
}

// TestResizeInPlace: a resize of a NotRequired container's cpu and memory
// reaches the running container through UpdateContainerResources (the
// runtime's truth converges to the spec) without a restart; the status
// reports the new resources and allocatedResources, the resize conditions
// come and go, ResizeStarted then ResizeCompleted are emitted, and the pod
// cgroup follows.
func TestResizeInPlace(t *testing.T) {
	h := start(t, 31)
	pod := mustCreate(t, h, ResizablePod("rz", h.NodeName, 0, 1))
	runUntil(t, h, "rz Running", time.Minute, func() bool { return PodIs(h, "default", "rz", corev1.PodRunning, true) })
	id := runningApp(h, pod.UID)

	resize(t, h, "rz", 3)
	began := h.K.Elapsed()
	runUntil(t, h, "rz resized", time.Minute, func() bool { return resizeSettledFor(h, "rz") })
	t.Logf("FIGURE in-place resize reported complete %v (virtual) after the resize", h.K.Elapsed()-began)
	if got := appInstances(h, pod.UID); len(got) != 1 || got[0].ID != id {
		t.Fatalf("app instances after an in-place resize: %+v; want only %s", got, id)
	}
	have, _ := h.Runtime.TrueContainerResources(id)
	want := &runtimeapi.LinuxContainerResources{CpuShares: 716, CpuPeriod: 100000, CpuQuota: 140000, MemoryLimitInBytes: 160 << 20}
	got := &runtimeapi.LinuxContainerResources{CpuShares: have.CpuShares, CpuPeriod: have.CpuPeriod, CpuQuota: have.CpuQuota, MemoryLimitInBytes: have.MemoryLimitInBytes}
	if d := cmp.Diff(want.String(), got.String()); d != "" {
		t.Errorf("container resources after the resize (-want +got):\n%s", d)
	}
	p, _ := APIPod(h, "default", "rz")
	cs := p.Status.ContainerStatuses[0]
	if cs.RestartCount != 0 {
		t.Errorf("restartCount %d after an in-place resize, want 0", cs.RestartCount)
	}
	if d := cmp.Diff(ResizeLevel(3).Requests, cs.AllocatedResources, quantityCmp); d != "" {
		t.Errorf("allocatedResources memory (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"ResizeStarted", "ResizeCompleted"}, eventReasons(h, "rz")); d != "" {
		t.Errorf("resize events (-want +got):\n%s", d)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.ObservedGeneration != p.Generation {
			t.Errorf("Ready observedGeneration %d, want the pod's %d", c.ObservedGeneration, p.Generation)
		}
	}
}

// TestResizeRestartContainer: a cpu resize of a container whose cpu
// resizePolicy is RestartContainer restarts it exactly once, the new
// instance created with the new resources.
func TestResizeRestartContainer(t *testing.T) {
	h := start(t, 32)
	pod := mustCreate(t, h, ResizablePod("rr", h.NodeName, 1, 1))
	runUntil(t, h, "rr Running", time.Minute, func() bool { return PodIs(h, "default", "rr", corev1.PodRunning, true) })
	resize(t, h, "rr", 2)
	runUntil(t, h, "rr resized", time.Minute, func() bool { return resizeSettledFor(h, "rr") })
	if err := h.K.RunFor(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	inst := appInstances(h, pod.UID)
	if len(inst) != 2 {
		t.Fatalf("app instances after a RestartContainer resize: %+v; want 2 (one restart)", inst)
	}
	have, _ := h.Runtime.TrueContainerResources(runningApp(h, pod.UID))
	if have.GetCpuQuota() != 100000 {
		t.Errorf("the new instance's CFS quota %d, want 100000 (1 CPU limit)", have.GetCpuQuota())
	}
	p, _ := APIPod(h, "default", "rr")
	if rc := p.Status.ContainerStatuses[0].RestartCount; rc != 1 {
		t.Errorf("restartCount %d, want 1", rc)
	}
}

// TestResizeDeferredUntilRoom: a resize that does not fit beside another
// pod waits as PodResizePending Deferred (upstream's message, event
// ResizeDeferred), nothing changes in the runtime, and it is carried out
// once the other pod is deleted; an agent crash meanwhile neither applies
// nor loses it.
func TestResizeDeferredUntilRoom(t *testing.T) {
	h := start(t, 33)
	mustCreate(t, h, ResizablePod("big", h.NodeName, 0, 5))
	pod := mustCreate(t, h, ResizablePod("small", h.NodeName, 0, 0))
	runUntil(t, h, "both Running", time.Minute, func() bool {
		return PodIs(h, "default", "big", corev1.PodRunning, true) && PodIs(h, "default", "small", corev1.PodRunning, true)
	})
	id := runningApp(h, pod.UID)
	before, _ := h.Runtime.TrueContainerResources(id)
	resize(t, h, "small", 7)
	var cond corev1.PodCondition
	runUntil(t, h, "small's resize deferred", time.Minute, func() bool {
		p, _ := APIPod(h, "default", "small")
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizePending {
				cond = c
				return true
			}
		}
		return false
	})
	wantMsg := "Node didn't have enough resource: cpu, requested: 1500, used: 1100, capacity: 2000"
	if cond.Reason != corev1.PodReasonDeferred || cond.Message != wantMsg {
		t.Errorf("PodResizePending %s %q; want Deferred %q", cond.Reason, cond.Message, wantMsg)
	}
	if d := cmp.Diff([]string{"ResizeDeferred"}, eventReasons(h, "small")); d != "" {
		t.Errorf("resize events (-want +got):\n%s", d)
	}

	h.CrashAgent()
	if err := h.K.RunFor(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	h.StartAgent()
	if err := h.K.RunFor(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	after, _ := h.Runtime.TrueContainerResources(id)
	if after.GetCpuQuota() != before.GetCpuQuota() || after.GetMemoryLimitInBytes() != before.GetMemoryLimitInBytes() {
		t.Fatalf("a deferred resize was applied across an agent restart: %v → %v", before, after)
	}
	if p, _ := APIPod(h, "default", "small"); !hasCondition(p, corev1.PodResizePending) {
		t.Fatalf("the restarted agent lost the deferred resize: conditions %+v", p.Status.Conditions)
	}

	if err := h.API.User().DeletePodGracefully("default", "big", nil); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "small resized", 2*time.Minute, func() bool { return resizeSettledFor(h, "small") })
	if got := appInstances(h, pod.UID); len(got) != 1 {
		t.Errorf("app instances %+v; want the one, resized in place", got)
	}
	have, _ := h.Runtime.TrueContainerResources(id)
	if have.GetCpuQuota() != 300000 {
		t.Errorf("CFS quota %d after the deferred resize, want 300000", have.GetCpuQuota())
	}
}

// TestResizeKeptAcrossCrash: an agent that crashes right after accepting
// a resize (checkpointed) carries it out after its restart.
func TestResizeKeptAcrossCrash(t *testing.T) {
	h := start(t, 34)
	pod := mustCreate(t, h, ResizablePod("kc", h.NodeName, 0, 1))
	runUntil(t, h, "kc Running", time.Minute, func() bool { return PodIs(h, "default", "kc", corev1.PodRunning, true) })
	hang := h.Runtime.Hang("UpdateContainerResources", "")
	resize(t, h, "kc", 4)
	runUntil(t, h, "the resize reaches the runtime", time.Minute, hang.Caught)
	h.CrashAgent()
	hang.Release()
	h.StartAgent()
	runUntil(t, h, "kc resized", time.Minute, func() bool { return resizeSettledFor(h, "kc") })
	if got := appInstances(h, pod.UID); len(got) != 1 {
		t.Errorf("app instances %+v; want one", got)
	}
}

// TestResizeMemoryBelowUsageErrors: lowering a memory limit below what
// the container uses is refused as upstream does (PodResizeInProgress,
// reason Error, "cannot decrease memory limits"), and the container keeps
// running with its old limit.
func TestResizeMemoryBelowUsageErrors(t *testing.T) {
	h := start(t, 35)
	p := ResizablePod("mu", h.NodeName, 0, 4)
	Env("app", "FAKECRI_MEMORY", "100Mi")(p)
	pod := mustCreate(t, h, p)
	runUntil(t, h, "mu Running", time.Minute, func() bool { return PodIs(h, "default", "mu", corev1.PodRunning, true) })
	id := runningApp(h, pod.UID)
	resize(t, h, "mu", 0)
	var cond corev1.PodCondition
	runUntil(t, h, "the resize errs", time.Minute, func() bool {
		p, _ := APIPod(h, "default", "mu")
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizeInProgress && c.Reason == corev1.PodReasonError {
				cond = c
				return true
			}
		}
		return false
	})
	if !strings.HasPrefix(cond.Message, "cannot decrease memory limits: attempting to set container \"app\" memory limit (67108864) below current usage") {
		t.Errorf("PodResizeInProgress message %q", cond.Message)
	}
	have, _ := h.Runtime.TrueContainerResources(id)
	old := ResizeLevel(4).Limits[corev1.ResourceMemory]
	if q := resource.NewQuantity(have.GetMemoryLimitInBytes(), resource.BinarySI); q.Cmp(old) != 0 {
		t.Errorf("memory limit %v after a refused decrease, want the old %v", q, old.String())
	}
	if got := appInstances(h, pod.UID); len(got) != 1 || got[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("app instances %+v; want the one, running", got)
	}
}

// allocation-checkpointed reports a running pod whose allocation is missing
// from the checkpoint (here: removed behind the agent's back), naming it,
// and nothing while the agent keeps the checkpoint itself.
func TestAllocationCheckpointedCatchesAMissingEntry(t *testing.T) {
	h := start(t, 5)
	c := NewChecker(h)
	web := mustCreate(t, h, NewPod("web", h.NodeName))
	if err := RunChecked(h, c, 10*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v := c.Violations(); len(v) != 0 {
		t.Fatalf("violations while the agent keeps its checkpoint: %v", v)
	}
	root := h.AgentConfig().Node.RootDir
	if root == "" {
		root = podspec.DefaultRootDir
	}
	store := allocation.NewStore(h.Files, root)
	if err := store.Load(); err != nil {
		t.Fatal(err)
	}
	if !store.Has(web.UID) {
		t.Fatalf("the checkpoint has no allocation for running pod web (%s): %v", web.UID, store.UIDs())
	}
	if err := store.Remove(web.UID); err != nil {
		t.Fatal(err)
	}
	if err := store.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := RunChecked(h, c, time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range c.Violations() {
		got = append(got, v.Invariant)
		if !strings.Contains(v.Detail, "default/web") {
			t.Errorf("violation does not name the pod: %s", v.Detail)
		}
	}
	if diff := cmp.Diff([]string{"allocation-checkpointed"}, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

// TestResizeRunningInitContainer: the node declares
// InPlacePodVerticalScalingInitContainers, so the apiserver accepts a
// resize of a running non-sidecar init container (the upstream conformance
// spec "should support resizing a non-sidecar init container" does the
// same); the agent updates that instance in place (no restart) and the
// init container's status reports the new resources.
func TestResizeRunningInitContainer(t *testing.T) {
	h := start(t, 33)
	pod := NewPod("rzi", h.NodeName, Init("init", time.Hour, 0))
	pod.Spec.InitContainers[0].Resources = ResizeLevel(1)
	pod.Spec.Containers[0].Resources = ResizeLevel(1)
	pod = mustCreate(t, h, pod)
	initRunning := func() string {
		for _, c := range TrueContainers(h) {
			if c.PodUID == pod.UID && c.Name == "init" && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return c.ID
			}
		}
		return ""
	}
	runUntil(t, h, "the init container running", time.Minute, func() bool { return initRunning() != "" })
	id := initRunning()
	for _, n := range h.API.User().Nodes() {
		if n.Name == h.NodeName && !slices.Contains(n.Status.DeclaredFeatures, "InPlacePodVerticalScalingInitContainers") {
			t.Fatalf("node declares %q, want InPlacePodVerticalScalingInitContainers among them", n.Status.DeclaredFeatures)
		}
	}
	if _, err := h.API.User().ResizePod("default", "rzi", map[string]corev1.ResourceRequirements{"init": ResizeLevel(3)}); err != nil {
		t.Fatalf("resize the init container: %v", err)
	}
	want := ResizeLevel(3)
	runUntil(t, h, "the init container's status resized", time.Minute, func() bool {
		p, ok := APIPod(h, "default", "rzi")
		if !ok || len(p.Status.InitContainerStatuses) == 0 || p.Status.InitContainerStatuses[0].Resources == nil {
			return false
		}
		return sameQuantities(p.Status.InitContainerStatuses[0].Resources.Limits, want.Limits)
	})
	if got := initRunning(); got != id {
		t.Fatalf("running init instance %q after the resize, want %q (in place)", got, id)
	}
	have, _ := h.Runtime.TrueContainerResources(id)
	if got, w := have.GetMemoryLimitInBytes(), want.Limits.Memory().Value(); got != w {
		t.Errorf("init container's memory limit in the runtime %d, want %d", got, w)
	}
	p, _ := APIPod(h, "default", "rzi")
	if d := cmp.Diff(want.Requests, p.Status.InitContainerStatuses[0].AllocatedResources, quantityCmp); d != "" {
		t.Errorf("init container's allocatedResources (-want +got):\n%s", d)
	}
}
