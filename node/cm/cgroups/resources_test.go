package cgroups

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/node/deps"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func podOf(containers ...corev1.Container) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: containers}}
	p.Name, p.Namespace, p.UID = "p", "default", "uid-p"
	return p
}

func ctr(req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func u64(v uint64) *uint64 { return &v }
func i64(v int64) *int64   { return &v }

// Expected values come from upstream v1.37.2 pkg/kubelet/cm
// helpers_linux.go ResourceConfigForPod (enforceCPULimits true, default
// period, MemoryQoS off, PodLevelResources on) and its test table
// (TestResourceConfigForPod).
func TestPodResourcesUpstream(t *testing.T) {
	const mi = 1 << 20
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want deps.CgroupResources
	}{
		{"besteffort", podOf(ctr(nil, nil)), deps.CgroupResources{CPUShares: u64(2)}},
		{"burstable-no-limits", podOf(ctr(rl("cpu", "100m", "memory", "100Mi"), nil)),
			deps.CgroupResources{CPUShares: u64(102)}},
		{"burstable-with-limits", podOf(ctr(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "200m", "memory", "200Mi"))),
			deps.CgroupResources{CPUShares: u64(102), CPUQuota: i64(20000), CPUPeriod: u64(100000), Memory: i64(200 * mi)}},
		{"burstable-partial-limits", podOf(
			ctr(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "200m", "memory", "200Mi")),
			ctr(rl("cpu", "100m", "memory", "100Mi"), nil)),
			deps.CgroupResources{CPUShares: u64(204)}},
		{"burstable-cpu-limits-only-everywhere", podOf(
			ctr(rl("cpu", "100m"), rl("cpu", "300m")),
			ctr(rl("memory", "100Mi"), rl("cpu", "100m"))),
			deps.CgroupResources{CPUShares: u64(102), CPUQuota: i64(40000), CPUPeriod: u64(100000)}},
		{"guaranteed", podOf(ctr(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "100m", "memory", "100Mi"))),
			deps.CgroupResources{CPUShares: u64(102), CPUQuota: i64(10000), CPUPeriod: u64(100000), Memory: i64(100 * mi)}},
		{"guaranteed-tiny-cpu-quota-floor", podOf(ctr(rl("cpu", "1m", "memory", "10Mi"), rl("cpu", "1m", "memory", "10Mi"))),
			deps.CgroupResources{CPUShares: u64(2), CPUQuota: i64(1000), CPUPeriod: u64(100000), Memory: i64(10 * mi)}},
		{"guaranteed-with-overhead", func() *corev1.Pod {
			p := podOf(ctr(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "100m", "memory", "100Mi")))
			p.Spec.Overhead = rl("cpu", "50m", "memory", "28Mi")
			return p
		}(), deps.CgroupResources{CPUShares: u64(153), CPUQuota: i64(15000), CPUPeriod: u64(100000), Memory: i64(128 * mi)}},
		{"init-container-max", func() *corev1.Pod {
			p := podOf(ctr(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "100m", "memory", "100Mi")))
			p.Spec.InitContainers = []corev1.Container{ctr(rl("cpu", "500m", "memory", "300Mi"), rl("cpu", "500m", "memory", "300Mi"))}
			return p
		}(), deps.CgroupResources{CPUShares: u64(512), CPUQuota: i64(50000), CPUPeriod: u64(100000), Memory: i64(300 * mi)}},
		{"pod-level-limits-with-unlimited-containers", func() *corev1.Pod {
			p := podOf(ctr(rl("cpu", "100m"), nil))
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "500m", "memory", "100Mi"), Limits: rl("cpu", "1", "memory", "200Mi")}
			return p
		}(), deps.CgroupResources{CPUShares: u64(512), CPUQuota: i64(100000), CPUPeriod: u64(100000), Memory: i64(200 * mi)}},
		{"hugepages-from-requests", podOf(ctr(rl("cpu", "100m", "memory", "100Mi", "hugepages-2Mi", "4Mi"), rl("cpu", "100m", "memory", "100Mi", "hugepages-2Mi", "4Mi"))),
			deps.CgroupResources{CPUShares: u64(102), CPUQuota: i64(10000), CPUPeriod: u64(100000), Memory: i64(100 * mi),
				HugePageLimits: map[int64]int64{2 * mi: 4 * mi}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PodResources(tc.pod)
			if len(got.HugePageLimits) == 0 {
				got.HugePageLimits = nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PodResources (-want +got):\n%s", diff)
			}
		})
	}
}

// Expected values follow upstream's qos_container_manager_linux.go
// (setCPUCgroupConfig, setMemoryReserve, setHugePagesUnbounded).
func TestQOSResources(t *testing.T) {
	const gi = 1 << 30
	guaranteed := podOf(ctr(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi")))
	burstable := podOf(ctr(rl("cpu", "250m", "memory", "512Mi"), nil))
	burstable2 := podOf(ctr(rl("cpu", "500m"), rl("cpu", "1")))
	bestEffort := podOf(ctr(nil, nil))
	active := []*corev1.Pod{guaranteed, burstable, burstable2, bestEffort}

	got := QOSResources(active, 8*gi, 0, []uint64{2 << 20})
	unbounded := map[int64]int64{2 << 20: 1 << 62}
	want := map[corev1.PodQOSClass]deps.CgroupResources{
		corev1.PodQOSBurstable:  {CPUShares: u64(768), HugePageLimits: unbounded},
		corev1.PodQOSBestEffort: {CPUShares: u64(2), HugePageLimits: unbounded},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("QOSResources without reserve (-want +got):\n%s", diff)
	}

	got = QOSResources(active, 8*gi, 50, nil)
	want = map[corev1.PodQOSClass]deps.CgroupResources{
		corev1.PodQOSBurstable:  {CPUShares: u64(768), Memory: i64(8*gi - gi/2), HugePageLimits: map[int64]int64{}},
		corev1.PodQOSBestEffort: {CPUShares: u64(2), Memory: i64(8*gi - gi/2 - gi/4), HugePageLimits: map[int64]int64{}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("QOSResources with memory=50%% (-want +got):\n%s", diff)
	}

	got = QOSResources(nil, 8*gi, 0, nil)
	if s := *got[corev1.PodQOSBurstable].CPUShares; s != 2 {
		t.Errorf("no Burstable pods: shares %d, want 2", s)
	}
}

func TestKubepodsResources(t *testing.T) {
	got := KubepodsResources(rl("cpu", "3500m", "memory", "7Gi", "pods", "110"))
	want := deps.CgroupResources{CPUShares: u64(3584), Memory: i64(7 << 30), HugePageLimits: map[int64]int64{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("KubepodsResources (-want +got):\n%s", diff)
	}
}
