package scenarios

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// TestResourcesReachTheRuntime: on the simulated node (cgroup v2, 2 MiB and
// 1 GiB huge pages) a pod with pod-level limits, huge pages and a
// RuntimeClass overhead runs, and the runtime received what upstream
// sends: the container under the pod's limits with its hugetlb limits and
// the cgroup v2 settings, the sandbox with the pod's resources and,
// apart, its overhead. The node reports its huge page pools.
func TestResourcesReachTheRuntime(t *testing.T) {
	h := harness.New(harness.Config{Seed: 7,
		Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) }})
	t.Cleanup(h.Close)
	h.StartAgent()
	q := resource.MustParse
	pod := mustCreate(t, h, NewPod("res", h.NodeName, func(p *corev1.Pod) {
		l := corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("256Mi"), "hugepages-2Mi": q("8Mi")}
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: l, Limits: l}
		p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("32Mi")}
	}))
	runUntil(t, h, "res Running", time.Minute, func() bool { return PodIs(h, "default", "res", corev1.PodRunning, true) })

	sbs := Sandboxes(h, pod.UID)
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes, want 1", len(sbs))
	}
	sb, _ := h.Runtime.TrueSandboxConfig(sbs[0].Id)
	v2 := map[string]string{"memory.oom.group": "1"}
	wantSandbox := &runtimeapi.LinuxPodSandboxConfig{
		Resources: &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuPeriod: 100000, CpuQuota: 100000, MemoryLimitInBytes: 256 << 20, Unified: v2},
		Overhead:  &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, CpuQuota: 10000, MemoryLimitInBytes: 32 << 20, Unified: v2},
	}
	if d := cmp.Diff(wantSandbox, sb.GetLinux(), protocmp.Transform(),
		protocmp.IgnoreFields(&runtimeapi.LinuxPodSandboxConfig{}, "security_context", "sysctls", "cgroup_parent")); d != "" {
		t.Errorf("sandbox resources (-want +got):\n%s", d)
	}
	var ctr *runtimeapi.ContainerConfig
	for _, c := range TrueContainers(h) {
		if c.PodUID == pod.UID {
			ctr, _ = h.Runtime.TrueContainerConfig(c.ID)
		}
	}
	want := &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuPeriod: 100000, CpuQuota: 100000, MemoryLimitInBytes: 256 << 20,
		OomScoreAdj:    -997, // Guaranteed by its pod-level resources
		HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 8 << 20}, {PageSize: "1GB"}},
		Unified:        map[string]string{"memory.oom.group": "1", "memory.high": "max"}}
	if d := cmp.Diff(want, ctr.GetLinux().GetResources(), protocmp.Transform()); d != "" {
		t.Errorf("container resources (-want +got):\n%s", d)
	}
	nodes := h.API.User().Nodes()
	if len(nodes) != 1 {
		t.Fatalf("%d node objects, want 1", len(nodes))
	}
	node := nodes[0]
	for _, name := range []corev1.ResourceName{"hugepages-2Mi", "hugepages-1Gi"} {
		if _, ok := node.Status.Capacity[name]; !ok {
			t.Errorf("node capacity %v lacks %s", node.Status.Capacity, name)
		}
	}
}
