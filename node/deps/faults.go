package deps

import (
	"context"
	"fmt"
)

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
	// FaultStatusResyncReversed: the status manager's batch resync queues
	// the pods in reverse order.
	FaultStatusResyncReversed
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
	// FaultObjectWatchClosed: the apiserver closes a configMap or secret
	// watch after an event.
	FaultObjectWatchClosed
	// FaultVolumeSetUpFails: a volume's set-up fails once (a transient
	// mount or write error) and is retried after its back-off.
	FaultVolumeSetUpFails
	// FaultTokenRefreshEarly: a service account token still fresh is
	// requested again.
	FaultTokenRefreshEarly
	// FaultServiceWatchClosed: the apiserver closes the services watch
	// after an event.
	FaultServiceWatchClosed
	// FaultPullReplyLost: an image pull succeeds in the runtime but its
	// reply is lost.
	FaultPullReplyLost
	// FaultStatusRewrite: a pod's status is queued for writing again
	// right after a write.
	FaultStatusRewrite
	// FaultContainerGCDeferred: the dead containers' collection runs one
	// housekeeping period late.
	FaultContainerGCDeferred
	// FaultManifestDirUnreadable: a scan of the static pod directory
	// fails with an I/O error.
	FaultManifestDirUnreadable
	// FaultStatsSampleSkipped: a stats sample's calls time out; the
	// previous sample stays.
	FaultStatsSampleSkipped
	// FaultImageGCLate: an image collection round runs one period late.
	FaultImageGCLate
	// FaultLogRotationLate: a log rotation round runs one period late.
	FaultLogRotationLate
	// FaultEvictionTickLate: an eviction cycle runs one period late.
	FaultEvictionTickLate
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
		FaultStatusResyncReversed:  {Name: "status-resync-reversed", Package: "node/status", Event: "the batch resync writes the pods in another order (it promises none)"},
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
		FaultObjectWatchClosed:     {Name: "object-watch-closed", Package: "node/objcache", Event: "the apiserver closes a configMap or secret watch (its timeout); the cache watches again and is sent the object again"},
		FaultVolumeSetUpFails:      {Name: "volume-setup-fails", Package: "node/volume", Event: "a volume's set-up fails once (a transient mount or write error); retried after its back-off"},
		FaultTokenRefreshEarly:     {Name: "token-refresh-early", Package: "node/token", Event: "a service account token is requested again while the one held is fresh"},
		FaultServiceWatchClosed:    {Name: "service-watch-closed", Package: "node/servicecache", Event: "the apiserver closes the services watch (its timeout); the cache resumes it"},
		FaultPullReplyLost:         {Name: "pull-reply-lost", Package: "node/images", Event: "an image pull completes in the runtime but its reply is lost (timeout); ErrImagePull, back-off, retry"},
		FaultStatusRewrite:         {Name: "status-rewrite", Package: "node/status", Event: "a pod's status is compared and written again at once (a resync beside a write)"},
		FaultContainerGCDeferred:   {Name: "container-gc-deferred", Package: "node/agent", Event: "the dead containers' collection runs one housekeeping period late (a busy node)"},
		FaultManifestDirUnreadable: {Name: "manifest-dir-unreadable", Package: "node/podsource", Event: "a scan of the static pod directory fails with an I/O error; the pods read before stay"},
		FaultStatsSampleSkipped:    {Name: "stats-sample-skipped", Package: "node/stats", Event: "a stats sample's calls time out; the previous sample stays one period longer"},
		FaultImageGCLate:           {Name: "image-gc-late", Package: "node/imagegc", Event: "an image collection round runs one period late"},
		FaultLogRotationLate:       {Name: "log-rotation-late", Package: "node/logrotate", Event: "a log rotation round runs one period late"},
		FaultEvictionTickLate:      {Name: "eviction-tick-late", Package: "node/eviction", Event: "an eviction cycle runs one period late (the housekeeping tick was busy)"},
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

// Err is the error a call fails with when point p fires where a reply is
// lost or a call times out: a deadline exceeded, as a real client sees
// it, naming the point.
func (p Point) Err() error {
	return fmt.Errorf("fault point %s: %w", p, context.DeadlineExceeded)
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
