package bench

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/scenarios"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// BenchmarkPodStartThroughput measures pods per second of wall time from
// "pod created in the simulated apiserver" to "status Running written by
// the agent", for N pods created at once, in-process (fake runtime and
// simulated apiserver, no I/O). One iteration is one whole batch.
func BenchmarkPodStartThroughput(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			var virtual time.Duration
			var reqs map[apiserver.Request]int
			for range b.N {
				b.StopTimer()
				h := benchNode(n)
				running := map[types.UID]bool{}
				h.API.OnWrite(func(r apiserver.Record) {
					if r.Kind == apiserver.KindPod && r.Pod != nil && r.Pod.Status.Phase == corev1.PodRunning {
						running[r.UID] = true
					}
				})
				h.StartAgent()
				if err := h.K.RunFor(time.Second); err != nil {
					b.Fatal(err)
				}
				start := h.K.Elapsed()
				before := h.API.Requests()
				b.StartTimer()
				for i := range n {
					if _, err := scenarios.Create(h, scenarios.NewPod(fmt.Sprintf("pod-%05d", i), h.NodeName)); err != nil {
						b.Fatal(err)
					}
				}
				if err := h.K.RunUntil(func() bool { return len(running) == n }, time.Hour); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				virtual += h.K.Elapsed() - start
				reqs = requestsSince(before, h.API.Requests())
				h.Close()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric((virtual / time.Duration(b.N)).Seconds(), "virtual-s")
			reportPerUnit(b, reqs, float64(n), "pod")
		})
	}
}
