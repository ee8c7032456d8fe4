package scenarios

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// podLevelResources sets the pod's pod-level requests and limits (cpu in
// millicores, memory in MiB; 0 leaves one unset).
func podLevelResources(reqCPU, reqMemMi, limCPU, limMemMi int64) PodOption {
	list := func(cpu, memMi int64) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu > 0 {
			l[corev1.ResourceCPU] = *resource.NewMilliQuantity(cpu, resource.DecimalSI)
		}
		if memMi > 0 {
			l[corev1.ResourceMemory] = *resource.NewQuantity(memMi<<20, resource.BinarySI)
		}
		return l
	}
	return func(p *corev1.Pod) {
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: list(reqCPU, reqMemMi), Limits: list(limCPU, limMemMi)}
	}
}

// sandboxCgroupParent is the cgroup parent the runtime holds for the
// pod's ready sandbox ("" with none).
func sandboxCgroupParent(h *harness.Harness, pod *corev1.Pod) string {
	for _, sb := range h.Runtime.TrueSandboxes() {
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY || sb.Metadata.GetUid() != string(pod.UID) {
			continue
		}
		if cfg, ok := h.Runtime.TrueSandboxConfig(sb.Id); ok {
			return cfg.GetLinux().GetCgroupParent()
		}
	}
	return ""
}

// TestPodRunsInTheCgroupOfTheClassItReports: the QoS class a pod reports
// is the one upstream gives it, it never changes while the pod runs, and
// the pod's sandbox runs in that class's pod cgroup. Upstream's rule, as
// this test models it: the class the status already carries stays; else
// pod-level resources decide when set, their missing requests defaulted
// from the containers' or else from the pod-level limits (the apiserver
// does so at creation), so pod-level limits only of cpu and memory are
// Guaranteed; else the containers decide.
func TestPodRunsInTheCgroupOfTheClassItReports(t *testing.T) {
	h := start(t, 26)
	c := NewChecker(h)
	tests := []struct {
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}{
		{NewPod("pod-limits", h.NodeName, podLevelResources(0, 0, 500, 64)), corev1.PodQOSGuaranteed},
		{NewPod("pod-cpu-limit", h.NodeName, podLevelResources(0, 0, 500, 0)), corev1.PodQOSBurstable},
		{NewPod("pod-limits-over-requests", h.NodeName, podLevelResources(0, 0, 500, 64), sizedResources("app", 250, 0, 0, 0)), corev1.PodQOSBurstable},
		{NewPod("pod-level-wins", h.NodeName, podLevelResources(250, 32, 500, 64), sizedResources("app", 100, 16, 100, 16)), corev1.PodQOSBurstable},
		{NewPod("container-limits", h.NodeName, sizedResources("app", 0, 0, 100, 16)), corev1.PodQOSGuaranteed},
		{NewPod("status-says", h.NodeName, sizedResources("app", 100, 16, 100, 16), func(p *corev1.Pod) {
			p.Status.QOSClass = corev1.PodQOSBestEffort
		}), corev1.PodQOSBestEffort},
	}
	seen := map[string]map[corev1.PodQOSClass]bool{}
	for _, tc := range tests {
		mustCreate(t, h, tc.pod)
		seen[tc.pod.Name] = map[corev1.PodQOSClass]bool{}
	}
	// Every 100 ms for 30 s of virtual time: record the class each pod
	// reports and run the invariants.
	for end := h.K.Elapsed() + 30*time.Second; h.K.Elapsed() < end; {
		if err := h.K.RunFor(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		for _, tc := range tests {
			if p, ok := APIPod(h, "default", tc.pod.Name); ok {
				seen[p.Name][p.Status.QOSClass] = true
			}
		}
		c.Check()
	}
	cfg := h.CgroupConfig()
	for _, tc := range tests {
		p, _ := APIPod(h, "default", tc.pod.Name)
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s is %s, want Running", p.Name, p.Status.Phase)
		}
		if got := slices.Sorted(maps.Keys(seen[p.Name])); !cmp.Equal(got, []corev1.PodQOSClass{tc.want}) {
			t.Errorf("pod %s reported the classes %v, want only %s", p.Name, got, tc.want)
		}
		want := cfg.PodName(p.UID, p.Status.QOSClass).Path(cfg.Driver)
		if got := sandboxCgroupParent(h, p); got != want {
			t.Errorf("pod %s reports %s; its sandbox runs in cgroup %q, want %q", p.Name, p.Status.QOSClass, got, want)
		}
		if _, ok := h.Cgroups.Get(want); !ok {
			t.Errorf("pod %s: its cgroup %s does not exist", p.Name, want)
		}
	}
	// status-says carries a class no real apiserver writes (it computes
	// the class from the spec at creation and keeps no client's): the
	// checker derives the class from the spec as the apiserver does
	// (refmodel.QOSClass, never the status the simulated apiserver fills
	// in with the agent's rule), so it rightly flags that pod, and only it.
	var v []Violation
	for _, x := range c.Violations() {
		if !strings.Contains(x.Detail, "status-says") {
			v = append(v, x)
		}
	}
	if len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
}
