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
	// FaultImageGCLate: an image collection round runs one period late.
	FaultImageGCLate
	// FaultEvictionTickLate: an eviction cycle runs one period late.
	FaultEvictionTickLate
	// FaultLeaseRenewLate: a lease renewal runs one interval late.
	FaultLeaseRenewLate
	// FaultRegisterReplyLost: the node's registration is applied but its
	// reply is lost.
	FaultRegisterReplyLost
	// FaultDeleteReplyLost: a finished pod's final delete is applied but
	// its reply is lost.
	FaultDeleteReplyLost
	// FaultHousekeepingLate: a housekeeping round runs one period late.
	FaultHousekeepingLate
	// FaultCleanupErrorAfterWork: a terminated pod's clean-up did its
	// work but reports an error, so it is retried after a back-off.
	FaultCleanupErrorAfterWork
	// FaultVolumeResyncEarly: a volume set up already is set up again
	// before its resync period.
	FaultVolumeResyncEarly
	// FaultAllocationCheckpointFails: the pod allocation checkpoint's
	// write fails.
	FaultAllocationCheckpointFails
	// FaultAllocationCheckpointTorn: the pod allocation checkpoint's
	// write is torn (the temporary file half written, never renamed).
	FaultAllocationCheckpointTorn
	// FaultNodeStatusReportEarly: the node's status is reported before
	// its report is due, unchanged.
	FaultNodeStatusReportEarly
	// FaultLeaseReread: the lease as last written is forgotten and read
	// again before the renewal.
	FaultLeaseReread
	// FaultMachineInfoReread: the machine's information is read again
	// for a node status.
	FaultMachineInfoReread
	// FaultPLEGEventRepeated: a pod's PLEG event is handed to its worker
	// twice.
	FaultPLEGEventRepeated
	// FaultRequeueRepeated: a pod due in the work queue is handed to its
	// worker twice.
	FaultRequeueRepeated
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
		FaultStatusWriteReplyLost:      {Name: "status-write-reply-lost", Package: "node/status", Event: "a pod status patch is applied but its reply is lost (timeout, connection reset); the manager retries"},
		FaultStatusResyncReversed:      {Name: "status-resync-reversed", Package: "node/status", Event: "the batch resync writes the pods in another order (it promises none)"},
		FaultLeaseReplyLost:            {Name: "lease-reply-lost", Package: "node/nodestatus", Event: "a lease renewal is applied but its reply is lost; the next update conflicts and re-reads"},
		FaultNodeStatusReplyLost:       {Name: "node-status-reply-lost", Package: "node/nodestatus", Event: "a node status patch is applied but its reply is lost; the sync retries"},
		FaultWatchEventRepeated:        {Name: "watch-event-repeated", Package: "node/podsource", Event: "a pod watch event is delivered twice (an informer's resync delivers an unchanged object)"},
		FaultWatchClosed:               {Name: "watch-closed", Package: "node/podsource", Event: "the apiserver closes the pod watch (timeout, restart); the source relists"},
		FaultQueueReversed:             {Name: "queue-reversed", Package: "node/agent", Event: "pods due together are synced in another order (the work queue promises no order)"},
		FaultSyncErrorAfterWork:        {Name: "sync-error-after-work", Package: "node/podworkers", Event: "a sync does its work but reports an error (a late CRI error); retried after the back-off, never later than its next sync"},
		FaultPLEGSpuriousEvent:         {Name: "pleg-spurious-event", Package: "node/pleg", Event: "a relist reports a pod changed that did not (a timestamp or sandbox update the pod does not show)"},
		FaultObjectWatchClosed:         {Name: "object-watch-closed", Package: "node/objcache", Event: "the apiserver closes a configMap or secret watch (its timeout); the cache watches again and is sent the object again"},
		FaultVolumeSetUpFails:          {Name: "volume-setup-fails", Package: "node/volume", Event: "a volume's set-up fails once (a transient mount or write error); retried after its back-off"},
		FaultTokenRefreshEarly:         {Name: "token-refresh-early", Package: "node/token", Event: "a service account token is requested again while the one held is fresh"},
		FaultServiceWatchClosed:        {Name: "service-watch-closed", Package: "node/servicecache", Event: "the apiserver closes the services watch (its timeout); the cache resumes it"},
		FaultPullReplyLost:             {Name: "pull-reply-lost", Package: "node/images", Event: "an image pull completes in the runtime but its reply is lost (timeout); ErrImagePull, back-off, retry"},
		FaultStatusRewrite:             {Name: "status-rewrite", Package: "node/status", Event: "a pod's status is compared and written again at once (a resync beside a write)"},
		FaultContainerGCDeferred:       {Name: "container-gc-deferred", Package: "node/agent", Event: "the dead containers' collection runs one housekeeping period late (a busy node)"},
		FaultManifestDirUnreadable:     {Name: "manifest-dir-unreadable", Package: "node/podsource", Event: "a scan of the static pod directory fails with an I/O error; the pods read before stay"},
		FaultImageGCLate:               {Name: "image-gc-late", Package: "node/imagegc", Event: "an image collection round runs one period late"},
		FaultEvictionTickLate:          {Name: "eviction-tick-late", Package: "node/eviction", Event: "an eviction cycle runs one period late (the housekeeping tick was busy)"},
		FaultLeaseRenewLate:            {Name: "lease-renew-late", Package: "node/nodestatus", Event: "a lease renewal runs one interval late (well within the lease's duration)"},
		FaultRegisterReplyLost:         {Name: "register-reply-lost", Package: "node/nodestatus", Event: "the Node's creation is applied but its reply is lost; the retry finds it exists and adopts it"},
		FaultDeleteReplyLost:           {Name: "delete-reply-lost", Package: "node/status", Event: "a finished pod's final delete is applied but its reply is lost; the retry finds it gone"},
		FaultHousekeepingLate:          {Name: "housekeeping-late", Package: "node/agent", Event: "a housekeeping round runs one period late (a busy node)"},
		FaultCleanupErrorAfterWork:     {Name: "cleanup-error-after-work", Package: "node/podworkers", Event: "a terminated pod's clean-up does its work but reports an error; retried after a back-off"},
		FaultVolumeResyncEarly:         {Name: "volume-resync-early", Package: "node/volume", Event: "a volume is set up again before its resync period (its object's watch event)"},
		FaultAllocationCheckpointFails: {Name: "allocation-checkpoint-fails", Package: "node/allocation", Event: "the pod allocation checkpoint's write fails (disk full, I/O error); the old file stays"},
		FaultAllocationCheckpointTorn:  {Name: "allocation-checkpoint-torn", Package: "node/allocation", Event: "the pod allocation checkpoint's write is torn: the temporary file half written, never renamed (a crash mid-write)"},
		FaultNodeStatusReportEarly:     {Name: "node-status-report-early", Package: "node/nodestatus", Event: "the node's status is reported unchanged before its report is due (as after an agent restart)"},
		FaultLeaseReread:               {Name: "lease-reread", Package: "node/nodestatus", Event: "the lease is read again before its renewal (as by a restarted agent)"},
		FaultMachineInfoReread:         {Name: "machine-info-reread", Package: "node/nodestatus", Event: "the machine's information is read again for a node status (as cadvisor refreshes it)"},
		FaultPLEGEventRepeated:         {Name: "pleg-event-repeated", Package: "node/agent", Event: "a pod's lifecycle event reaches its worker twice (a relist and a runtime event saying the same)"},
		FaultRequeueRepeated:           {Name: "requeue-repeated", Package: "node/agent", Event: "a pod due for a resync is handed to its worker twice (a tick and an event together)"},
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
