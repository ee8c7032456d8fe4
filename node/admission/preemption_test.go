package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func qosOf(p *corev1.Pod) corev1.PodQOSClass {
	return corev1.PodQOSClass(p.Labels["qos"])
}

func victim(name string, qos corev1.PodQOSClass, prio int32, req corev1.ResourceList) *corev1.Pod {
	return podReq(name, req, func(p *corev1.Pod) {
		p.UID = types.UID(name)
		p.Labels = map[string]string{"qos": string(qos)}
		p.Spec.Priority = &prio
	})
}

// A critical pod refused for resources alone preempts as the kubelet
// does: the lowest QoS classes first, the pod closest to the shortfall.
func TestPodsToPreempt(t *testing.T) {
	critical := int32(2_000_001_000)
	crit := func(req corev1.ResourceList, opts ...func(*corev1.Pod)) *corev1.Pod {
		return podReq("crit", req, append([]func(*corev1.Pod){func(p *corev1.Pod) { p.Spec.Priority = &critical }}, opts...)...)
	}
	g := victim("g", corev1.PodQOSGuaranteed, 0, rl("memory", "2Gi", "cpu", "1"))
	bu := victim("bu", corev1.PodQOSBurstable, 0, rl("memory", "1Gi"))
	beSmall := victim("be-small", corev1.PodQOSBestEffort, 0, nil)
	other := victim("other-critical", corev1.PodQOSBestEffort, critical+1, nil)
	node := testNode() // cpu 2, memory 4Gi, pods 3
	cases := []struct {
		name     string
		pod      *corev1.Pod
		admitted []*corev1.Pod
		want     []string
		ok       bool
	}{
		{name: "pods: the BestEffort pod goes", pod: crit(nil), admitted: []*corev1.Pod{g, bu, beSmall}, want: []string{"be-small"}, ok: true},
		{name: "memory: the Burstable pod is enough", pod: crit(rl("memory", "1500Mi")), admitted: []*corev1.Pod{g, bu}, want: []string{"bu"}, ok: true},
		{name: "memory: the Guaranteed pod alone frees enough", pod: crit(rl("memory", "2500Mi")), admitted: []*corev1.Pod{g, bu}, want: []string{"g"}, ok: true},
		{name: "critical pods are not preempted", pod: crit(nil), admitted: []*corev1.Pod{other, other, other}},
		{name: "not critical", pod: podReq("p", nil), admitted: []*corev1.Pod{g, bu, beSmall}},
		{name: "a taint is not fixed by preemption", pod: crit(rl("memory", "1500Mi"), func(p *corev1.Pod) { p.Spec.NodeName = "elsewhere" }), admitted: []*corev1.Pod{g, bu}},
		{name: "fits already", pod: crit(rl("memory", "100Mi")), admitted: []*corev1.Pod{g}},
		{name: "nothing frees enough", pod: crit(rl("memory", "8Gi")), admitted: []*corev1.Pod{g, bu}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods, ok := PodsToPreempt(tc.pod, qosOf, node, tc.admitted)
			var got []string
			for _, p := range pods {
				got = append(got, p.Name)
			}
			if ok != tc.ok || !cmp.Equal(tc.want, got) {
				t.Errorf("PodsToPreempt = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
