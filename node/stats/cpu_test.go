package stats

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestNanoCores(t *testing.T) {
	s := int64(time.Second)
	for _, tc := range []struct {
		name      string
		prev, cur cpuReading
		want      uint64
		ok        bool
	}{
		{"quarter core over 10s", cpuReading{At: 10 * s, Total: 1e9}, cpuReading{At: 20 * s, Total: 3.5e9}, 250_000_000, true},
		{"idle", cpuReading{At: s, Total: 7}, cpuReading{At: 2 * s, Total: 7}, 0, true},
		{"two cores over 1ms", cpuReading{At: s, Total: 0}, cpuReading{At: s + 1e6, Total: 2e6}, 2_000_000_000, true},
		{"a year of 64 cores does not overflow", cpuReading{At: 0, Total: 0}, cpuReading{At: 365 * 24 * 3600 * s, Total: 64 * 365 * 24 * 3600 * uint64(s)}, 64_000_000_000, true},
		{"0.95 core over 20.006 s (used × 1e9 beyond 64 bits)", cpuReading{At: 7 * s, Total: 25_149_350_000}, cpuReading{At: 7*s + 20_006_000_000, Total: 44_155_050_000}, 950_000_000, true},
		{"same instant", cpuReading{At: s, Total: 1}, cpuReading{At: s, Total: 2}, 0, false},
		{"counter went back", cpuReading{At: s, Total: 5e9}, cpuReading{At: 2 * s, Total: 1e9}, 0, false},
		{"older reading", cpuReading{At: 2 * s, Total: 1}, cpuReading{At: s, Total: 2}, 0, false},
	} {
		got, ok := NanoCores(tc.prev, tc.cur)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: NanoCores = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// A sequence of samples: the first has no rate to give, the second gets
// it from the first, a runtime's own non-zero rate is kept, a second
// sample of the same instant reuses the rate, an idle container gets an
// explicit 0, and an ID that went away is forgotten (no rate when it
// comes back).
func TestFillNanoCores(t *testing.T) {
	s := int64(time.Second)
	cpu := func(at int64, total, nano uint64) *runtimeapi.CpuUsage {
		c := &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: total}}
		if nano != 0 {
			c.UsageNanoCores = &runtimeapi.UInt64Value{Value: nano}
		}
		return c
	}
	idle := func(c *runtimeapi.CpuUsage) *runtimeapi.CpuUsage {
		c.UsageNanoCores = &runtimeapi.UInt64Value{}
		return c
	}
	type step struct {
		ids  []string
		in   []*runtimeapi.CpuUsage
		want []*runtimeapi.CpuUsage
	}
	steps := []step{
		{[]string{"a", "b"}, []*runtimeapi.CpuUsage{cpu(10*s, 1e9, 0), cpu(10*s, 0, 0)},
			[]*runtimeapi.CpuUsage{cpu(10*s, 1e9, 0), cpu(10*s, 0, 0)}},
		{[]string{"a", "b"}, []*runtimeapi.CpuUsage{cpu(20*s, 6e9, 0), cpu(20*s, 1e9, 7)},
			[]*runtimeapi.CpuUsage{cpu(20*s, 6e9, 500_000_000), cpu(20*s, 1e9, 7)}},
		{[]string{"a"}, []*runtimeapi.CpuUsage{cpu(20*s, 6e9, 0)},
			[]*runtimeapi.CpuUsage{cpu(20*s, 6e9, 500_000_000)}},
		{[]string{"a", "b"}, []*runtimeapi.CpuUsage{cpu(30*s, 6e9, 0), cpu(30*s, 2e9, 0)},
			[]*runtimeapi.CpuUsage{idle(cpu(30*s, 6e9, 0)), cpu(30*s, 2e9, 0)}},
	}
	var prev map[string]cpuReading
	for i, st := range steps {
		prev = fillNanoCores(prev, 0, st.ids, st.in)
		if diff := cmp.Diff(st.want, st.in, protocmp.Transform()); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
}
