package stats

import (
	"math"
	"math/bits"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// cpuReading is one cumulative CPU usage reading of a container or sandbox.
type cpuReading struct {
	// At is when it was read (Unix nanoseconds).
	At int64
	// Total is the cumulative usage in core-nanoseconds.
	Total uint64
	// Rate is the nanocores computed from the reading before (0 and
	// HasRate false when there was none).
	Rate    uint64
	HasRate bool
}

// NanoCores is the CPU rate between two readings of the same container, in
// billionths of a core: the usage added divided by the time passed. It
// reports false when the readings cannot give a rate: cur not later than
// prev, or the counter went back (a new instance, a reset).
func NanoCores(prev, cur cpuReading) (uint64, bool) {
	if cur.At <= prev.At || cur.Total < prev.Total {
		return 0, false
	}
	used := cur.Total - prev.Total
	elapsed := uint64(cur.At - prev.At)
	// used × 1e9 / elapsed in 128 bits; a rate beyond 2^64 saturates.
	hi, lo := bits.Mul64(used, uint64(time.Second))
	if hi >= elapsed {
		return math.MaxUint64, true
	}
	q, _ := bits.Div64(hi, lo, elapsed)
	return q, true
}

// readingOf returns c's cumulative reading (at the sample time when the
// runtime gave no timestamp); false without a cumulative counter.
func readingOf(c *runtimeapi.CpuUsage, sampleAt int64) (cpuReading, bool) {
	if c == nil || c.GetUsageCoreNanoSeconds() == nil {
		return cpuReading{}, false
	}
	at := c.GetTimestamp()
	if at == 0 {
		at = sampleAt
	}
	return cpuReading{At: at, Total: c.GetUsageCoreNanoSeconds().GetValue()}, true
}

// fillNanoCores sets UsageNanoCores where the runtime left it out or at 0
// (containerd computes it only from its own previous read, so its first
// answer is 0, and some runtimes never report it) from the previous
// reading of the same ID in prev. It returns the readings to keep for the
// next sample: this one's with its rate; or the previous one when this
// one is not later (a second sample of the same instant reuses its rate).
func fillNanoCores(prev map[string]cpuReading, sampleAt int64, ids []string, cpus []*runtimeapi.CpuUsage) map[string]cpuReading {
	next := make(map[string]cpuReading, len(ids))
	for i, id := range ids {
		cur, ok := readingOf(cpus[i], sampleAt)
		if !ok || id == "" {
			continue
		}
		p, seen := prev[id]
		switch {
		case seen && p.At >= cur.At && p.Total <= cur.Total:
			cur = p
		case seen:
			cur.Rate, cur.HasRate = NanoCores(p, cur)
		}
		next[id] = cur
		if cur.HasRate && cpus[i].GetUsageNanoCores().GetValue() == 0 {
			cpus[i].UsageNanoCores = &runtimeapi.UInt64Value{Value: cur.Rate}
		}
	}
	return next
}

// fillSampleNanoCores fills the nanocores of s's containers, sandboxes and
// node
// from the previous readings, and remembers this sample's.
func (p *Provider) fillSampleNanoCores(s *Sample) {
	at := s.Time.UnixNano()
	var ids []string
	var cpus []*runtimeapi.CpuUsage
	for _, c := range s.ContainerStats {
		ids = append(ids, "c/"+c.GetAttributes().GetId())
		cpus = append(cpus, c.GetCpu())
	}
	for _, sb := range s.SandboxStats {
		ids = append(ids, "s/"+sb.GetAttributes().GetId())
		cpus = append(cpus, sb.GetLinux().GetCpu())
	}
	if s.NodeCPU != nil {
		ids = append(ids, "node")
		cpus = append(cpus, s.NodeCPU)
	}
	kids, kcpus := s.Kernel.kernelCPUs()
	ids, cpus = append(ids, kids...), append(cpus, kcpus...)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cpu = fillNanoCores(p.cpu, at, ids, cpus)
}
