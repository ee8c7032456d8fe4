package bench

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/agent"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/scenarios"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// lifecycleSizes are the node sizes of the delete and idle benchmarks.
var lifecycleSizes = []int{100, 1000, 10000}

// runningNode returns a harness whose agent runs n pods, all Running as
// the API shows them (the agent's requests so far included).
func runningNode(b *testing.B, n int) *harness.Harness {
	b.Helper()
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
	for i := range n {
		if _, err := scenarios.Create(h, scenarios.NewPod(fmt.Sprintf("pod-%05d", i), h.NodeName)); err != nil {
			b.Fatal(err)
		}
	}
	if err := h.K.RunUntil(func() bool { return len(running) == n }, time.Hour); err != nil {
		b.Fatal(err)
	}
	return h
}

// benchNode returns a harness (seed 1) whose node admits n pods: the
// default maxPods (110) would refuse the rest with OutOfpods.
func benchNode(n int) *harness.Harness {
	return harness.New(harness.Config{Seed: 1, Agent: agent.Config{NodeStatus: nodestatus.Config{MaxPods: max(n, nodestatus.DefaultMaxPods)}}})
}

// requestsSince is after minus before, by request kind.
func requestsSince(before, after map[apiserver.Request]int) map[apiserver.Request]int {
	out := map[apiserver.Request]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// reportPerUnit reports each kind of request divided by units, as
// "<verb>-<resource>/<unit>", and the total.
func reportPerUnit(b *testing.B, reqs map[apiserver.Request]int, units float64, unit string) {
	b.Helper()
	keys := make([]apiserver.Request, 0, len(reqs))
	total := 0
	for k, v := range reqs {
		keys = append(keys, k)
		total += v
	}
	slices.SortFunc(keys, func(a, c apiserver.Request) int {
		if a.String() < c.String() {
			return -1
		}
		return 1
	})
	for _, k := range keys {
		b.ReportMetric(float64(reqs[k])/units, k.Verb+"-"+k.Resource+"/"+unit)
	}
	b.ReportMetric(float64(total)/units, "requests/"+unit)
}

// BenchmarkPodDeleteThroughput measures pods per second of wall time from
// N running pods deleted at once (as kubectl delete does, with their grace
// period) to all of them gone from the apiserver, and the agent's API
// requests per deleted pod by verb.
func BenchmarkPodDeleteThroughput(b *testing.B) {
	for _, n := range lifecycleSizes {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			var virtual time.Duration
			var reqs map[apiserver.Request]int
			for range b.N {
				b.StopTimer()
				h := runningNode(b, n)
				gone := 0
				h.API.OnWrite(func(r apiserver.Record) {
					if r.Kind == apiserver.KindPod && r.Verb == apiserver.VerbDelete {
						gone++
					}
				})
				before := h.API.Requests()
				start := h.K.Elapsed()
				b.StartTimer()
				for i := range n {
					if err := h.API.User().DeletePodGracefully(corev1.NamespaceDefault, fmt.Sprintf("pod-%05d", i), nil); err != nil {
						b.Fatal(err)
					}
				}
				if err := h.K.RunUntil(func() bool { return gone == n }, time.Hour); err != nil {
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

// BenchmarkIdle runs a node of N running pods for 10 virtual minutes in
// which nothing happens (after a minute of settling) and reports the
// agent's API requests per minute by verb, and the wall time per virtual
// minute.
func BenchmarkIdle(b *testing.B) {
	const window = 10 * time.Minute
	for _, n := range lifecycleSizes {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			var reqs map[apiserver.Request]int
			for range b.N {
				b.StopTimer()
				h := runningNode(b, n)
				if err := h.K.RunFor(time.Minute); err != nil {
					b.Fatal(err)
				}
				before := h.API.Requests()
				b.StartTimer()
				if err := h.K.RunFor(window); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				reqs = requestsSince(before, h.API.Requests())
				h.Close()
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/window.Minutes(), "wall-s/virtual-min")
			reportPerUnit(b, reqs, window.Minutes(), "min")
		})
	}
}
