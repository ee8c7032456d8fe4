package admission

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// benchPods are n small pods (1m cpu, 1Ki memory, a container port not
// bound on the host) and a node with room for twice as many.
func benchPods(n int) ([]*corev1.Pod, Node) {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		p := podReq(fmt.Sprintf("p%d", i), rl("cpu", "1m", "memory", "1Ki"))
		p.UID = types.UID(fmt.Sprintf("uid-%d", i))
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
		pods[i] = p
	}
	node := Node{Name: "n1", Allocatable: rl("cpu", fmt.Sprint(2*n), "memory", "100Gi", "pods", fmt.Sprint(2*n))}
	return pods, node
}

// benchCandidate is the pod decided on: small, binding a host port.
func benchCandidate() *corev1.Pod {
	pod := podReq("new", rl("cpu", "1m", "memory", "1Ki"))
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 9000}}
	return pod
}

// BenchmarkAdmitOverList is the decision on one more pod (binding a host
// port) beside N admitted pods given as a list, their Usage summed for
// each decision: O(N) per decision.
func BenchmarkAdmitOverList(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			admitted, node := benchPods(n)
			pod := benchCandidate()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if d := AdmitBeside(pod, node, UsageOf(admitted)); !d.Admitted() {
					b.Fatal(d)
				}
			}
		})
	}
}

// BenchmarkAdmitBeside is the same decision beside the N pods' Usage kept
// by an Admitted set, with the pod's admission into the set and its
// removal: the cost should not grow with N.
func BenchmarkAdmitBeside(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			pods, node := benchPods(n)
			s := NewAdmitted()
			for _, p := range pods {
				s.Set(p)
			}
			pod := benchCandidate()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if d := AdmitBeside(pod, node, s.Usage()); !d.Admitted() {
					b.Fatal(d)
				}
				s.Set(pod)
				s.Remove(pod.UID)
			}
		})
	}
}
