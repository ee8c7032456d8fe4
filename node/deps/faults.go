package deps

// Fault points (FoundationDB's BUGGIFY): places in the agent's own code
// where the simulator may make a rare but legal path happen — a
// checkpoint write that fails, a status write whose reply is lost, a
// watch event delivered twice — so that every sweep runs the paths the
// edges (runtime, apiserver) seldom drive. In production Core.Faults is
// nil and every point is Core.Fault's nil check: no call, no allocation
// (TestFaultIsFreeWhenNil, BenchmarkFaultNil). Each point stands for an
// event the real world can produce; it must never make a world the
// kubelet's contract excludes, or the checker would flag the agent for
// the simulator's lie.

// Point names one fault point. The catalogue (Points) says where it is
// and what real event it stands for.
type Point uint8

// The fault points, one per rare path. Their names, packages and the
// events they stand for are in Points (and docs/checker.md).
const (
	// FaultStatusWriteReplyLost: a pod status patch was applied but its
	// reply was lost, so the status manager retries it.
	FaultStatusWriteReplyLost Point = iota + 1
	// FaultStatusResyncExtra: the status manager's batch resync runs at
	// once, as when its timer and a write coincide.
	FaultStatusResyncExtra
	// FaultLeaseReplyLost: a lease renewal was applied but its reply was
	// lost.
	FaultLeaseReplyLost
	// FaultNodeStatusReplyLost: a node status patch was applied but its
	// reply was lost.
	FaultNodeStatusReplyLost
	// FaultWatchEventRepeated: a pod watch event is delivered twice.
	FaultWatchEventRepeated
	// FaultWatchClosed: the apiserver closes the pod watch after an
	// event.
	FaultWatchClosed
	// FaultQueueReversed: the pod workers' work queue hands out the pods
	// due together in reverse order.
	FaultQueueReversed
	// FaultSyncErrorAfterWork: a pod sync did its work but reports an
	// error, so the pod is synced again after a back-off.
	FaultSyncErrorAfterWork
	// FaultPLEGSpuriousEvent: a relist reports a pod changed that did
	// not.
	FaultPLEGSpuriousEvent
	// FaultCPUCheckpointFails: the CPU manager's checkpoint write fails.
	FaultCPUCheckpointFails
	// FaultCPUCheckpointTorn: the CPU manager's checkpoint write is torn
	// (the temporary file half written, never renamed).
	FaultCPUCheckpointTorn
	// FaultMemoryCheckpointFails: the memory manager's checkpoint write
	// fails.
	FaultMemoryCheckpointFails
	// FaultMemoryCheckpointTorn: the memory manager's checkpoint write is
	// torn.
	FaultMemoryCheckpointTorn
	// FaultDeviceCheckpointFails: the device manager's checkpoint write
	// fails.
	FaultDeviceCheckpointFails
	// FaultObjectCacheMiss: a configMap or secret cache entry is dropped
	// and read again from the API.
	FaultObjectCacheMiss
	// numPoints is one past the last point.
	numPoints
)

// PointInfo describes a fault point: its name (as sweeps report it), the
// agent package it lives in and the real event it stands for.
type PointInfo struct {
	Point   Point
	Name    string
	Package string
	Event   string
}

// pointTable is the catalogue, indexed by Point.
func pointTable() [numPoints]PointInfo {
	return [numPoints]PointInfo{
		FaultStatusWriteReplyLost:  {Name: "status-write-reply-lost", Package: "node/status", Event: "a pod status patch is applied but its reply is lost (timeout, connection reset); the manager retries"},
		FaultStatusResyncExtra:     {Name: "status-resync-extra", Package: "node/status", Event: "the batch resync runs early, as when its timer fires beside a write"},
		FaultLeaseReplyLost:        {Name: "lease-reply-lost", Package: "node/nodestatus", Event: "a lease renewal is applied but its reply is lost; the next update conflicts and re-reads"},
		FaultNodeStatusReplyLost:   {Name: "node-status-reply-lost", Package: "node/nodestatus", Event: "a node status patch is applied but its reply is lost; the sync retries"},
		FaultWatchEventRepeated:    {Name: "watch-event-repeated", Package: "node/podsource", Event: "a pod watch event is delivered twice (an informer's resync delivers an unchanged object)"},
		FaultWatchClosed:           {Name: "watch-closed", Package: "node/podsource", Event: "the apiserver closes the pod watch (timeout, restart); the source relists"},
		FaultQueueReversed:         {Name: "queue-reversed", Package: "node/agent", Event: "pods due together are synced in another order (the work queue promises no order)"},
		FaultSyncErrorAfterWork:    {Name: "sync-error-after-work", Package: "node/podworkers", Event: "a sync does its work but reports an error (a late CRI error), so it is retried after a back-off"},
		FaultPLEGSpuriousEvent:     {Name: "pleg-spurious-event", Package: "node/pleg", Event: "a relist reports a pod changed that did not (a timestamp or sandbox update the pod does not show)"},
		FaultCPUCheckpointFails:    {Name: "cpu-checkpoint-fails", Package: "node/cm/cpumanager", Event: "the CPU manager's checkpoint write fails (disk full, I/O error)"},
		FaultCPUCheckpointTorn:     {Name: "cpu-checkpoint-torn", Package: "node/cm/cpumanager", Event: "the CPU manager's checkpoint write is torn: the temporary file half written, never renamed"},
		FaultMemoryCheckpointFails: {Name: "memory-checkpoint-fails", Package: "node/cm/memorymanager", Event: "the memory manager's checkpoint write fails"},
		FaultMemoryCheckpointTorn:  {Name: "memory-checkpoint-torn", Package: "node/cm/memorymanager", Event: "the memory manager's checkpoint write is torn"},
		FaultDeviceCheckpointFails: {Name: "device-checkpoint-fails", Package: "node/cm/devicemanager", Event: "the device manager's checkpoint write fails"},
		FaultObjectCacheMiss:       {Name: "object-cache-miss", Package: "node/objcache", Event: "a configMap or secret cache entry is evicted and read again from the API"},
	}
}

// Points is the catalogue of fault points, in order.
func Points() []PointInfo {
	table := pointTable()
	out := make([]PointInfo, 0, numPoints-1)
	for p := Point(1); p < numPoints; p++ {
		info := table[p]
		info.Point = p
		out = append(out, info)
	}
	return out
}

// String is the point's name.
func (p Point) String() string {
	if p == 0 || p >= numPoints {
		return "unknown-fault-point"
	}
	return pointTable()[p].Name
}

// Faults is the simulator's side of the fault points: Fire reports
// whether point p makes its rare path happen this time. It is called from
// agent tasks, one at a time, so the simulator's draws stay in the
// trace's order.
type Faults interface {
	Fire(p Point) bool
}

// Fault reports whether fault point p fires: always false in production,
// where Faults is nil (a nil check, nothing more).
func (c Core) Fault(p Point) bool {
	return c.Faults != nil && c.Faults.Fire(p)
}
