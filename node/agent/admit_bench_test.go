package agent_test

import (
	"fmt"
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
// (allocation checkpoint included) and the pod's forgetting, so that N
// stays N. The cost per op should not grow with N.
func BenchmarkAdmitPod(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			h := harness.New(harness.Config{Seed: 1, CPUs: harness.Topology(1, 1, 32, 1), // room for 20,000 pods' 1m
				Agent: agent.Config{NodeStatus: nodestatus.Config{MaxPods: 2 * n}}})
			b.Cleanup(h.Close)
			h.StartAgent()
			a := h.Agent()
			for i := range n {
				a.SeedAdmittedForTest(benchPod(i, 0))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				p := benchPod(n+1+i, 9000)
				if !a.AdmitForTest(p) {
					b.Fatalf("pod %d refused", n+1+i)
				}
				a.ForgetAdmissionForTest(p.UID)
			}
		})
	}
}
