package harness

import (
	"context"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// PageSize is the simulated kernel's page: a memory limit written to a
// cgroup is rounded down to a multiple of it, as Linux rounds memory.max.
const PageSize = 4096

// KernelMemoryLimit is the memory limit the simulated kernel holds for a
// container created with limit bytes (0: none): limit rounded down to a
// page multiple, deps.Unlimited for none.
func KernelMemoryLimit(limit int64) uint64 {
	if limit <= 0 {
		return deps.Unlimited
	}
	return uint64(limit) / PageSize * PageSize
}

// kernelStats is the simulated deps.CgroupStatsReader: each running
// container's cgroup limits as the simulated kernel holds them (from the
// resources the runtime created or last updated it with). Only what the
// model knows is reported; pods and system cgroups have none.
type kernelStats struct{ rt *fakecri.Runtime }

// Containers reads the limits of the containers the runtime has.
func (k kernelStats) Containers(_ context.Context, ids []string) (map[string]deps.CgroupStats, error) {
	out := make(map[string]deps.CgroupStats, len(ids))
	for _, id := range ids {
		r, ok := k.rt.TrueContainerResources(id)
		if !ok {
			continue
		}
		out[id] = deps.CgroupStats{Spec: deps.CgroupSpec{
			MemoryLimit: KernelMemoryLimit(r.GetMemoryLimitInBytes()), SwapLimit: deps.Unlimited,
			CPUPeriod: uint64(r.GetCpuPeriod()), CPUQuota: uint64(r.GetCpuQuota()), CPUShares: uint64(r.GetCpuShares()),
		}}
	}
	return out, nil
}

// Pods reads nothing: the model has no pod-level figures.
func (kernelStats) Pods(context.Context, []string) (map[string]deps.CgroupStats, error) {
	return map[string]deps.CgroupStats{}, nil
}

// System reads nothing: the model has no system cgroups.
func (kernelStats) System(context.Context) (map[string]deps.CgroupStats, error) {
	return map[string]deps.CgroupStats{}, nil
}
