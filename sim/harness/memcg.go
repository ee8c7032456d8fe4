package harness

import (
	"context"
	"sync"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/node/deps"
)

// memoryNotifier is the simulated memcg threshold notifier: armed at a
// working set by the agent, it fires when the world moves the node's
// memory across it (MemoryMoved), as the kernel's eventfd fires at the
// crossing. Container memory growing on its own is seen at the eviction
// manager's next periodic cycle instead. Like the kernel's, it outlives
// agent restarts; each agent arms it anew.
type memoryNotifier struct {
	rt  *fakecri.Runtime
	sig deps.Signal

	mu        sync.Mutex
	threshold uint64 // 0: not armed
	above     bool
	fired     int
}

func (n *memoryNotifier) workingSet() uint64 {
	u := n.rt.NodeUsage()
	return u.MemoryCapacity - min(u.MemoryAvailable, u.MemoryCapacity)
}

func (n *memoryNotifier) SetThreshold(workingSet uint64) error {
	ws := n.workingSet()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.threshold != workingSet {
		n.threshold, n.above = workingSet, ws > workingSet
	}
	return nil
}

func (n *memoryNotifier) Next(ctx context.Context) error { return n.sig.Wait(ctx) }

// check fires the notifier when the working set crossed the threshold
// since the last check.
func (n *memoryNotifier) check() {
	ws := n.workingSet()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.threshold == 0 {
		return
	}
	if above := ws > n.threshold; above != n.above {
		n.above = above
		n.fired++
		n.sig.Notify()
	}
}

// MemoryMoved tells the simulated kernel that the node's memory use was
// changed (SetNodeMemoryUsage): the memcg threshold notifier fires if it
// crossed the agent's threshold.
func (h *Harness) MemoryMoved() { h.memcg.check() }

// MemoryThresholdFired is how many times the memcg threshold notifier
// fired.
func (h *Harness) MemoryThresholdFired() int {
	h.memcg.mu.Lock()
	defer h.memcg.mu.Unlock()
	return h.memcg.fired
}
