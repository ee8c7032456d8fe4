package podspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Expected values below come from reading the upstream kubelet v1.37.2:
// pkg/kubelet/kuberuntime/kuberuntime_container_linux.go
// (generateLinuxContainerResources, calculateLinuxResources,
// GetHugepageLimitsFromResources, getCPULimit/getMemoryLimit),
// kuberuntime_sandbox_linux.go (calculateSandboxResources,
// convertOverheadToLinuxResources). The QoS class's cases are in
// qos_test.go.

func podWith(containers []corev1.Container, edit func(*corev1.PodSpec)) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: containers}}
	p.Name, p.Namespace, p.UID = "p", "default", "uid-p"
	if edit != nil {
		edit(&p.Spec)
	}
	return p
}

func ctr(name string, req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func podLevel(req, lim corev1.ResourceList) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) { s.Resources = &corev1.ResourceRequirements{Requests: req, Limits: lim} }
}

func TestLinuxResourcesUpstream(t *testing.T) {
	node := testNode()
	node.HugePageSizes = []uint64{2 << 20, 1 << 30}
	v2 := node
	v2.CgroupV2 = true
	v2single := v2
	v2single.SingleProcessOOMKill = true
	zeroHuge := []*runtimeapi.HugepageLimit{{PageSize: "2MB"}, {PageSize: "1GB"}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		node NodeInfo
		want *runtimeapi.LinuxContainerResources
	}{
		{"every node page size gets a limit, 0 when unasked", podWith([]corev1.Container{ctr("a", nil, nil)}, nil), node,
			&runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000, HugepageLimits: zeroHuge}},
		{"container hugepages limit", podWith([]corev1.Container{ctr("a", rl("memory", "64Mi", "hugepages-2Mi", "8Mi"), rl("memory", "64Mi", "hugepages-2Mi", "8Mi"))}, nil), node,
			&runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, MemoryLimitInBytes: 64 << 20, OomScoreAdj: 993, // 1000 - 1000·64Mi/8Gi
				HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 8 << 20}, {PageSize: "1GB"}}}},
		{"pod-level limits stand in for the container's, container hugepages win", podWith([]corev1.Container{ctr("a", nil, rl("hugepages-1Gi", "1Gi"))},
			podLevel(rl("cpu", "500m", "memory", "256Mi"), rl("cpu", "1", "memory", "512Mi", "hugepages-2Mi", "4Mi", "hugepages-1Gi", "2Gi"))), node,
			// cpu request: none on the container, so its (pod-level) limit stands in.
			// OOM score: the pod-level 256 MiB request is the container's share: 1000 - 1000·256/8192.
			&runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuPeriod: 100000, CpuQuota: 100000, MemoryLimitInBytes: 512 << 20, OomScoreAdj: 969,
				HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 4 << 20}, {PageSize: "1GB", Limit: 1 << 30}}}},
		{"cgroup v2: memory.oom.group and memory.high=max", podWith([]corev1.Container{ctr("a", nil, nil)}, nil), v2,
			&runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000, HugepageLimits: zeroHuge,
				Unified: map[string]string{"memory.oom.group": "1", "memory.high": "max"}}},
		{"cgroup v2 with single-process OOM kills", podWith([]corev1.Container{ctr("a", nil, nil)}, nil), v2single,
			&runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000, HugepageLimits: zeroHuge,
				Unified: map[string]string{"memory.high": "max"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := linuxResources(tc.pod, &tc.pod.Spec.Containers[0], tc.node)
			if d := cmp.Diff(tc.want, got, protocmp.Transform()); d != "" {
				t.Errorf("linuxResources (-want +got):\n%s", d)
			}
		})
	}
}

func TestOOMScoreAdjPodLevel(t *testing.T) {
	node := testNode() // 8 GiB
	// Pod-level request 2 GiB, containers request 512 MiB: the 1.5 GiB left
	// is shared by the two containers, 768 MiB each.
	pod := podWith([]corev1.Container{ctr("a", rl("memory", "512Mi"), nil), ctr("b", nil, nil)},
		podLevel(rl("memory", "2Gi"), rl("memory", "4Gi")))
	for i, want := range []int64{
		1000 - 1000*(512+768)/8192, // 844
		1000 - 1000*768/8192,       // 907
	} {
		if got := oomScoreAdj(pod, &pod.Spec.Containers[i], node.MemoryCapacity); got != want {
			t.Errorf("container %s: oomScoreAdj = %d, want %d", pod.Spec.Containers[i].Name, got, want)
		}
	}
}

func TestSandboxResources(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	v2 := testNode()
	v2.CgroupV2 = true
	for _, tc := range []struct {
		name                string
		pod                 *corev1.Pod
		node                NodeInfo
		wantRes, wantOverhd *runtimeapi.LinuxContainerResources
	}{
		{"containers summed, sidecar included, init max", podWith([]corev1.Container{
			ctr("a", rl("cpu", "200m", "memory", "100Mi"), rl("cpu", "400m", "memory", "200Mi")),
			ctr("b", rl("cpu", "300m"), rl("cpu", "600m", "memory", "100Mi")),
		}, func(s *corev1.PodSpec) {
			side := ctr("side", rl("cpu", "100m"), rl("cpu", "100m", "memory", "50Mi"))
			side.RestartPolicy = &always
			s.InitContainers = []corev1.Container{ctr("init", rl("cpu", "2"), rl("cpu", "2", "memory", "1Gi")), side}
		}), testNode(),
			// requests: max(init 2, 0.2+0.3+0.1 sidecar) = 2 cpu; limits: max(2, 0.4+0.6+0.1) cpu,
			// memory max(1Gi, 200+100+50 Mi) = 1Gi.
			&runtimeapi.LinuxContainerResources{CpuShares: 2048, CpuPeriod: 100000, CpuQuota: 200000, MemoryLimitInBytes: 1 << 30},
			&runtimeapi.LinuxContainerResources{}},
		{"overhead excluded from resources, sent apart as request = limit", podWith([]corev1.Container{
			ctr("a", rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}, func(s *corev1.PodSpec) {
			s.Overhead = rl("cpu", "250m", "memory", "120Mi")
		}), v2,
			&runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuPeriod: 100000, CpuQuota: 100000, MemoryLimitInBytes: 1 << 30,
				Unified: map[string]string{"memory.oom.group": "1"}},
			&runtimeapi.LinuxContainerResources{CpuShares: 256, CpuPeriod: 100000, CpuQuota: 25000, MemoryLimitInBytes: 120 << 20,
				Unified: map[string]string{"memory.oom.group": "1"}}},
		{"pod-level resources", podWith([]corev1.Container{ctr("a", nil, nil)},
			podLevel(rl("cpu", "500m", "memory", "256Mi"), rl("cpu", "1", "memory", "512Mi"))), testNode(),
			&runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 100000, MemoryLimitInBytes: 512 << 20},
			&runtimeapi.LinuxContainerResources{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, overhead := SandboxResources(tc.pod, tc.node)
			if d := cmp.Diff(tc.wantRes, res, protocmp.Transform()); d != "" {
				t.Errorf("resources (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantOverhd, overhead, protocmp.Transform()); d != "" {
				t.Errorf("overhead (-want +got):\n%s", d)
			}
		})
	}
}

func TestHugePageUnitSize(t *testing.T) {
	for size, want := range map[uint64]string{64 << 10: "64KB", 2 << 20: "2MB", 32 << 20: "32MB", 1 << 30: "1GB", 16 << 30: "16GB", 512: "512B"} {
		if got, ok := hugePageUnitSize(size); !ok || got != want {
			t.Errorf("hugePageUnitSize(%d) = %q, %v; want %q", size, got, ok, want)
		}
	}
	if _, ok := hugePageUnitSize(3 << 20); ok {
		t.Error("hugePageUnitSize(3 MiB) ok, want not a page size")
	}
}
