package agent

import (
	"context"
	"log/slog"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/node/podspec"
)

// withMachineFacts fills what the machine says about the node into the
// pod-spec layer's NodeInfo, computed exactly as the node status computes
// it (nodestatus.ReadResources): the memory capacity (the denominator of
// OOM scores) and the allocatable resources (what a resourceFieldRef to a
// limit the container does not set reads), its huge page sizes and whether
// it runs cgroup v2 (the hugetlb and unified settings of every container).
// Values the caller set win. The
// machine is read once, when the agent is built: a node's capacity does not
// change while it runs.
func withMachineFacts(machine deps.Machine, log *slog.Logger, node podspec.NodeInfo, nc nodestatus.Config) podspec.NodeInfo {
	if machine == nil || (node.Allocatable != nil && node.MemoryCapacity > 0) {
		return node
	}
	if nc.NodeName == "" {
		nc.NodeName = node.NodeName
	}
	// Built before any task runs: no cancellation to honour, and both
	// machines answer without blocking.
	capacity, allocatable, err := nodestatus.ReadResources(context.Background(), machine, nc)
	if err != nil {
		if log != nil {
			log.Warn("node resources unknown: unset limits read as 0 in the downward API", "error", err.Error())
		}
		return node
	}
	if node.Allocatable == nil {
		node.Allocatable = allocatable
	}
	if node.MemoryCapacity <= 0 {
		node.MemoryCapacity = capacity.Memory().Value()
	}
	if info, err := machine.Info(context.Background()); err == nil {
		if node.HugePageSizes == nil {
			for _, pool := range info.HugePages {
				node.HugePageSizes = append(node.HugePageSizes, pool.PageSizeBytes)
			}
		}
		node.CgroupV2 = node.CgroupV2 || info.CgroupV2
	}
	return node
}
