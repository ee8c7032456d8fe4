package agent_test

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/agent"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// benchPod is a small Burstable pod: one container requesting 1m of cpu
// and 1Ki of memory, with a container port; hostPort, when positive,
// binds it on the host.
func benchPod(i int, hostPort int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("uid-%08d", i)),
			CreationTimestamp: metav1.Unix(int64(i), 0)},
		Spec: corev1.PodSpec{NodeName: "sim-node", Containers: []corev1.Container{{
			Name: "app", Image: "busybox:1.37",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080, HostPort: hostPort}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("1Ki")}},
		}}},
	}
}

// BenchmarkAdmitPod measures the admission of one more pod (with a host
// port) on a node that already admitted N pods: one op is the admission
// and the pod's forgetting, so that N stays N. With checkpoint=new each op
// admits a pod never seen, whose allocation is checkpointed (the
// checkpoint file holds every pod's: O(N) bytes written); with
// checkpoint=unchanged the same pod is admitted again each time, its
// allocation already checkpointed, which leaves admission's own work.
func BenchmarkAdmitPod(b *testing.B) {
	for _, fresh := range []bool{true, false} {
		for _, n := range []int{100, 1000, 10000} {
			name := fmt.Sprintf("checkpoint=new/N=%d", n)
			if !fresh {
				name = fmt.Sprintf("checkpoint=unchanged/N=%d", n)
			}
			b.Run(name, func(b *testing.B) { benchAdmitPod(b, n, fresh) })
		}
	}
}

func benchAdmitPod(b *testing.B, n int, fresh bool) {
	h := harness.New(harness.Config{Seed: 1, CPUs: harness.Topology(1, 1, 32, 1), // room for 20,000 pods' 1m
		Agent: agent.Config{NodeStatus: nodestatus.Config{MaxPods: 2 * n}}})
	b.Cleanup(h.Close)
	h.StartAgent()
	a := h.Agent()
	for i := range n {
		a.SeedAdmittedForTest(benchPod(i, 0))
	}
	if !fresh { // the pod's allocation checkpointed before the timer starts
		p := benchPod(n, 9000)
		if !a.AdmitForTest(p) {
			b.Fatalf("pod %d refused", n)
		}
		a.ForgetAdmissionForTest(p.UID)
	}
	runtime.GC() // the set-up's garbage is not the ops'
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := n
		if fresh {
			k = n + i
		}
		p := benchPod(k, 9000)
		if !a.AdmitForTest(p) {
			b.Fatalf("pod %d refused", k)
		}
		a.ForgetAdmissionForTest(p.UID)
	}
}
