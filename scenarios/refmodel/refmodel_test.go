package refmodel

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// res builds requirements from "cpu=100m,memory=1Mi" style pairs.
func res(requests, limits map[string]string) corev1.ResourceRequirements {
	list := func(m map[string]string) corev1.ResourceList {
		if m == nil {
			return nil
		}
		out := corev1.ResourceList{}
		for k, v := range m {
			out[corev1.ResourceName(k)] = resource.MustParse(v)
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: list(requests), Limits: list(limits)}
}

func podOf(init []corev1.ResourceRequirements, regular ...corev1.ResourceRequirements) *corev1.Pod {
	p := &corev1.Pod{}
	for _, r := range init {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "i", Resources: r})
	}
	for _, r := range regular {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c", Resources: r})
	}
	return p
}

func TestQOSClass(t *testing.T) {
	guaranteed := res(map[string]string{"cpu": "1", "memory": "1Gi"}, map[string]string{"cpu": "1", "memory": "1Gi"})
	limitsOnly := res(nil, map[string]string{"cpu": "1", "memory": "1Gi"})
	none := res(nil, nil)
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}{
		{"no resources", podOf(nil, none), corev1.PodQOSBestEffort},
		{"storage only", podOf(nil, res(map[string]string{"ephemeral-storage": "1Gi"}, nil)), corev1.PodQOSBestEffort},
		{"equal requests and limits", podOf(nil, guaranteed), corev1.PodQOSGuaranteed},
		{"limits only (requests default to them)", podOf(nil, limitsOnly), corev1.PodQOSGuaranteed},
		{"cpu only guaranteed", podOf(nil, res(nil, map[string]string{"cpu": "1"})), corev1.PodQOSBurstable},
		{"request below limit", podOf(nil, res(map[string]string{"cpu": "500m", "memory": "1Gi"}, map[string]string{"cpu": "1", "memory": "1Gi"})), corev1.PodQOSBurstable},
		{"guaranteed beside best effort", podOf(nil, guaranteed, none), corev1.PodQOSBurstable},
		{"best effort init beside guaranteed", podOf([]corev1.ResourceRequirements{none}, guaranteed), corev1.PodQOSBurstable},
		{"guaranteed init and app", podOf([]corev1.ResourceRequirements{guaranteed}, guaranteed), corev1.PodQOSGuaranteed},
		{"status is not read", func() *corev1.Pod {
			p := podOf(nil, none)
			p.Status.QOSClass = corev1.PodQOSGuaranteed
			return p
		}(), corev1.PodQOSBestEffort},
		{"pod-level limits win over containers", func() *corev1.Pod {
			p := podOf(nil, none)
			r := limitsOnly
			p.Spec.Resources = &r
			return p
		}(), corev1.PodQOSGuaranteed},
	} {
		if got := QOSClass(tc.pod); got != tc.want {
			t.Errorf("%s: QOSClass = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// cand is a candidate named name with priority prio, requesting reqMem
// bytes of memory and using mem.
func cand(name string, prio int32, reqMem string, mem int64) Candidate {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}, Spec: corev1.PodSpec{Priority: &prio,
		Containers: []corev1.Container{{Name: "c"}}}}
	if reqMem != "" {
		p.Spec.Containers[0].Resources = res(map[string]string{"memory": reqMem, "ephemeral-storage": reqMem}, nil)
	}
	return Candidate{Pod: p, Usage: Usage{Memory: mem, Disk: mem, Processes: mem}, HasStats: true}
}

func names(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Pod.Name)
	}
	return out
}

func TestRank(t *testing.T) {
	noStats := cand("nostats", 100, "", 0)
	noStats.HasStats = false
	for _, tc := range []struct {
		signal Signal
		cands  []Candidate
		want   []string
	}{
		{SignalMemoryAvailable, []Candidate{cand("within", 0, "100", 50), cand("over-high", 10, "10", 20), cand("over-low", 0, "10", 15)},
			[]string{"over-low", "over-high", "within"}},
		{SignalMemoryAvailable, []Candidate{cand("over-less", 0, "10", 20), cand("over-more", 0, "10", 90), noStats},
			[]string{"nostats", "over-more", "over-less"}},
		{SignalMemoryAvailable, []Candidate{cand("within-a", 5, "100", 50), cand("within-b", 5, "100", 60)},
			[]string{"within-b", "within-a"}},
		{SignalNodeFsAvailable, []Candidate{cand("within", 0, "100", 50), cand("over-high", 10, "10", 20), noStats},
			[]string{"nostats", "over-high", "within"}},
		{SignalPIDAvailable, []Candidate{cand("many-high", 10, "", 90), noStats, cand("few-low", 0, "", 3), cand("many-low", 0, "", 30)},
			[]string{"many-low", "few-low", "many-high", "nostats"}},
	} {
		Rank(tc.signal, tc.cands)
		if diff := cmp.Diff(tc.want, names(tc.cands)); diff != "" {
			t.Errorf("%s ranking (-want +got):\n%s", tc.signal, diff)
		}
	}
}

func TestRequestAddsOverheadOnlyToANonZeroTotal(t *testing.T) {
	p := podOf(nil, res(map[string]string{"memory": "100"}, nil), res(nil, nil))
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("10"), corev1.ResourceCPU: resource.MustParse("1")}
	if got := Request(p, corev1.ResourceMemory); got != 110 {
		t.Errorf("memory request %d, want 110", got)
	}
	if got := Request(p, corev1.ResourceCPU); got != 0 {
		t.Errorf("cpu request %d, want 0 (no container requests cpu)", got)
	}
}

func TestIsCritical(t *testing.T) {
	prio := func(v int32) *corev1.Pod { return &corev1.Pod{Spec: corev1.PodSpec{Priority: &v}} }
	annotated := func(k, v string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{k: v}}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"plain", &corev1.Pod{}, false},
		{"high but not system priority", prio(SystemCriticalPriority - 1), false},
		{"system-cluster-critical", prio(SystemCriticalPriority), true},
		{"system-node-critical", prio(SystemCriticalPriority + 1000), true},
		{"static", annotated(annotationConfigSource, "file"), true},
		{"from the API", annotated(annotationConfigSource, "api"), false},
		{"mirror", annotated(annotationConfigMirror, "hash"), true},
	} {
		if got := IsCritical(tc.pod); got != tc.want {
			t.Errorf("%s: IsCritical = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRestarts(t *testing.T) {
	policy := func(p corev1.ContainerRestartPolicy) *corev1.ContainerRestartPolicy { return &p }
	restartOn42 := []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	for _, tc := range []struct {
		name     string
		pod      corev1.RestartPolicy
		own      *corev1.ContainerRestartPolicy
		rules    []corev1.ContainerRestartRule
		code     int32
		want     bool
		runsOnce bool
	}{
		{"always after success", corev1.RestartPolicyAlways, nil, nil, 0, true, false},
		{"unset is always", "", nil, nil, 0, true, false},
		{"on failure after success", corev1.RestartPolicyOnFailure, nil, nil, 0, false, false},
		{"on failure after failure", corev1.RestartPolicyOnFailure, nil, nil, 1, true, false},
		{"never after failure", corev1.RestartPolicyNever, nil, nil, 1, false, true},
		{"own always beats pod never", corev1.RestartPolicyNever, policy(corev1.ContainerRestartPolicyAlways), nil, 0, true, false},
		{"own never beats pod always", corev1.RestartPolicyAlways, policy(corev1.ContainerRestartPolicyNever), nil, 1, false, true},
		{"rule restarts a listed code", corev1.RestartPolicyNever, policy(corev1.ContainerRestartPolicyNever), restartOn42, 42, true, false},
		{"rule leaves other codes to the policy", corev1.RestartPolicyNever, policy(corev1.ContainerRestartPolicyNever), restartOn42, 1, false, false},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.pod, Containers: []corev1.Container{{Name: "c", RestartPolicy: tc.own, RestartPolicyRules: tc.rules}}}}
		if got := Restarts(pod, &pod.Spec.Containers[0], tc.code); got != tc.want {
			t.Errorf("%s: Restarts = %v, want %v", tc.name, got, tc.want)
		}
		if got := RunsOnce(pod); got != tc.runsOnce {
			t.Errorf("%s: RunsOnce = %v, want %v", tc.name, got, tc.runsOnce)
		}
	}
}

func TestThresholdAndShares(t *testing.T) {
	q := resource.MustParse("100Mi")
	hard := Threshold{Signal: SignalMemoryAvailable, Quantity: &q, Hard: true}
	if hard.Met(100<<20, 1<<30) || !hard.Met(100<<20-1, 1<<30) {
		t.Errorf("100Mi threshold: met at exactly 100Mi or not below it")
	}
	pct := Threshold{Signal: SignalNodeFsAvailable, Percentage: 0.1}
	if !pct.Met(99, 1000) || pct.Met(100, 1000) {
		t.Errorf("10%% threshold of 1000: want met below 100 only")
	}
	if got := HardMemoryReservation([]Threshold{pct, hard}, 1<<30); got != 100<<20 {
		t.Errorf("hard memory reservation %d, want %d", got, 100<<20)
	}
	for milli, want := range map[int64]uint64{0: 2, 1: 2, 1000: 1024, 250: 256, 1 << 30: 262144} {
		if got := MilliCPUToShares(milli); got != want {
			t.Errorf("shares of %dm = %d, want %d", milli, got, want)
		}
	}
}
