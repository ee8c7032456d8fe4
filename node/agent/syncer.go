package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/metrics"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/podworkers"
	"github.com/lockstep-dev/lockstep/node/runtimesync"
	"github.com/lockstep-dev/lockstep/node/status"
	"github.com/lockstep-dev/lockstep/node/unseen"
)

var _ podworkers.Syncer = (*Agent)(nil)

// since is the oldest runtime view a step may act on: after the worker's
// last action, and never from before this agent started.
func (a *Agent) since(lastSync time.Time) time.Time { return oldestView(lastSync, a.loop.start) }

// oldestView is the later of lastSync and start.
func oldestView(lastSync, start time.Time) time.Time {
	if lastSync.Before(start) {
		return start
	}
	return lastSync
}

// SyncPod is the syncing step of a pod's worker.
func (a *Agent) SyncPod(ctx context.Context, pod *corev1.Pod, lastSync time.Time) (podworkers.SyncResult, error) {
	unsupported := a.checkUnsupported(pod)
	if reason, msg := a.rejection(pod); reason != "" {
		return a.refuse(pod, reason, msg), nil
	}
	st, err := a.pleg.Cache().GetNewerThan(ctx, pod.UID, viewSince(a.since(lastSync)))
	if err != nil {
		return podworkers.SyncResult{}, fmt.Errorf("wait for the runtime view of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if !regress121003 && a.viewIsStale(pod, st) {
		// A container this agent started is missing from the view: it
		// lags behind our own actions. Acting on it could start a second
		// instance, so wait for a fresher one.
		return podworkers.SyncResult{RequeueAfter: a.cfg.SyncTick}, nil
	}
	if other, ok := a.otherStaticInstance(pod); ok {
		// An earlier version this agent has no worker for (it ran under
		// a previous agent) still runs: wait until housekeeping has
		// stopped it, so two versions never run together.
		a.d.Log.Info("static pod waits for its earlier version to stop",
			"pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID), "earlier", string(other))
		return podworkers.SyncResult{RequeueAfter: a.cfg.SyncTick}, nil
	}
	prev := a.status.WithCachedStatus(pod)
	terminal := podutil.IsTerminal(prev.Status.Phase)
	if !terminal && a.pastDeadline(prev) {
		return a.deadlineExceeded(ctx, pod, prev, st), nil
	}
	// run is the pod with the resources it was allocated (a resize the
	// node has not accepted yet waits, PodResizePending).
	run, rz, resized := pod, status.Resize{}, false
	if !terminal {
		run, rz = a.allocate(pod, prev.Status.Conditions)
		if err := a.flushAllocations(pod); err != nil {
			return podworkers.SyncResult{}, err
		}
		a.pods.probes.AddPod(pod)
		if err := a.ensurePodCgroup(run); err != nil {
			return podworkers.SyncResult{}, err
		}
		rz.Error, resized = a.resizeInPlace(ctx, run, st)
	}
	// The status is the kubelet's SyncPod's: computed from the runtime's
	// view before this sync's actions, with the reasons the syncs before
	// it left containers waiting for, and set before the actions; what
	// they change shows at the next sync (their PLEG events, or the
	// retry). The sandbox's readiness is set as soon as a new one runs
	// (sandboxReady), the resize conditions after the actions.
	now := a.d.Clock.Now()
	s := withUnsupportedMessage(status.Generate(prev, st, a.reasons(pod.UID), a.pods.probes.ForPod(pod, st), a.nodeAddrs(ctx, pod), now), unsupported)
	if !terminal {
		s = status.WithResources(s, run, st)
	}
	if s.Phase == corev1.PodRunning && prev.Status.Phase != corev1.PodRunning && !pod.CreationTimestamp.IsZero() {
		a.cfg.Metrics.ObservePodStartDuration(now.Sub(pod.CreationTimestamp.Time))
	}
	if statusAfterVolumes {
		// The deliberately broken build (teeth_volstatus.go): the wait
		// before the status (the pod's cgroup made already).
		if _, err := a.waitForVolumes(ctx, pod); err != nil {
			return podworkers.SyncResult{}, err
		}
	}
	a.status.SetPodStatus(pod, s)
	// The pod's volumes, after its status and its cgroup, as the
	// kubelet's SyncPod orders them: a pod whose volume source is missing
	// shows why it waits.
	if waited, err := a.waitForVolumes(ctx, pod); err != nil {
		return podworkers.SyncResult{}, err
	} else if waited {
		if st, err = a.pleg.Cache().GetNewerThan(ctx, pod.UID, viewSince(a.since(lastSync))); err != nil {
			return podworkers.SyncResult{}, fmt.Errorf("wait for the runtime view of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}

	res, syncErr := a.exec.Execute(ctx, run, st, terminal, a.unhealthy(pod), a.pods.probes.ForPod(pod, st).Started)
	a.expect(pod.UID, res.Started)
	if !terminal {
		view := a.finishResize(ctx, run, st, &rz, resized)
		if rs := a.resizeStatus(run, prev.Status.Conditions, s, rz, view); !equality.Semantic.DeepEqual(rs, s) {
			s = rs
			a.status.SetPodStatus(pod, s)
		}
	}
	return syncResult(pod, s, res.Actions.RetryAfter, a.cfg.SyncTick, now), syncErr
}

// syncResult is what a sync that wrote status s tells pod's worker: whether
// the pod is terminal, and when to sync again (0: at the resync period):
// the executor's retry, within a tick while a resize is in progress (it
// completes, or is retried, then), and no later than the pod's active
// deadline.
func syncResult(pod *corev1.Pod, s corev1.PodStatus, retry, tick time.Duration, now time.Time) podworkers.SyncResult {
	out := podworkers.SyncResult{Terminal: podutil.IsTerminal(s.Phase), RequeueAfter: retry}
	if resizing(s) && (out.RequeueAfter == 0 || out.RequeueAfter > tick) {
		out.RequeueAfter = tick
	}
	if s.StartTime != nil && !out.Terminal {
		if left, ok := status.ActiveDeadline(pod, &s.StartTime.Time, now); ok && (out.RequeueAfter == 0 || left < out.RequeueAfter) {
			out.RequeueAfter = max(left, time.Millisecond)
		}
	}
	return out
}

// pastDeadline reports whether pod (carrying its cached status) has run
// longer than its activeDeadlineSeconds.
func (a *Agent) pastDeadline(pod *corev1.Pod) bool {
	if pod.Status.StartTime == nil {
		return false
	}
	left, ok := status.ActiveDeadline(pod, &pod.Status.StartTime.Time, a.d.Clock.Now())
	return ok && left <= 0
}

// deadlineExceeded fails a pod past its active deadline, as upstream
// does: event and status reason DeadlineExceeded, phase Failed; the
// worker then terminates it (its containers are killed within the grace
// period).
func (a *Agent) deadlineExceeded(ctx context.Context, pod, prev *corev1.Pod, st *podstate.PodStatus) podworkers.SyncResult {
	if a.d.API.Events != nil {
		ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
		a.d.API.Events.Event(ref, corev1.EventTypeNormal, status.ReasonDeadlineExceeded, status.MessageDeadlineExceeded)
	}
	a.d.Log.Info("pod exceeded its active deadline", "pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID),
		"activeDeadlineSeconds", *pod.Spec.ActiveDeadlineSeconds)
	now := a.d.Clock.Now()
	s := status.Generate(prev, st, nil, a.pods.probes.ForPod(pod, st), a.nodeAddrs(ctx, pod), now)
	a.status.SetPodStatus(pod, status.DeadlineExceeded(prev, s, st, now))
	return podworkers.SyncResult{Terminal: true}
}

// otherStaticInstance returns the UID of another pod with the same full
// name as the static pod that still has running containers in the
// runtime's view.
func (a *Agent) otherStaticInstance(pod *corev1.Pod) (types.UID, bool) {
	if !podutil.IsStaticPod(pod) {
		return "", false
	}
	return runningNamesake(pod, a.pleg.Cache().UIDs(), a.pleg.Cache().Get)
}

// runningNamesake returns the first of uids (read through view) that is
// another pod of pod's namespace and name with a running container.
func runningNamesake(pod *corev1.Pod, uids []types.UID, view func(types.UID) (*podstate.PodStatus, bool)) (types.UID, bool) {
	for _, uid := range uids {
		if uid == pod.UID {
			continue
		}
		st, ok := view(uid)
		if ok && st.Name == pod.Name && st.Namespace == pod.Namespace && len(st.Running()) > 0 {
			return uid, true
		}
	}
	return "", false
}

// SyncTerminatingPod stops every container of the pod within the grace
// period and confirms nothing still runs.
func (a *Agent) SyncTerminatingPod(ctx context.Context, uid types.UID, pod *corev1.Pod, grace int64, lastSync time.Time) error {
	a.pods.probes.Terminating(uid)
	a.forgetAdmission(uid)
	if pod != nil {
		// An evicted pod's status is Failed (reason Evicted) before its
		// containers stop, as the kubelet sets it; the API is shown the
		// phase once they have stopped (status.ContainersStopped).
		// The status reports the generation of the pod terminated (a
		// graceful delete bumps it), as upstream's first status write of a
		// terminating pod does.
		a.status.ObserveGeneration(pod)
		prev := a.status.WithCachedStatus(pod)
		if s, ok := a.evictedStatus(uid, prev.Status); ok && !podutil.IsTerminal(prev.Status.Phase) {
			a.status.SetPodStatus(pod, s)
		}
	}
	st, err := a.pleg.Cache().GetNewerThan(ctx, uid, a.since(lastSync))
	if err != nil {
		return fmt.Errorf("wait for the runtime view of terminating pod %s: %w", uid, err)
	}
	if err := a.exec.KillPod(ctx, pod, a.unseen.WithUnseen(uid, st), grace); err != nil {
		return err
	}
	if err := a.pleg.RefreshPod(ctx, uid); err != nil {
		return fmt.Errorf("refresh terminating pod %s: %w", uid, err)
	}
	after, _ := a.pleg.Cache().Get(uid)
	if running := after.Running(); len(running) > 0 {
		return fmt.Errorf("pod %s still has %d running containers (first: %q)", uid, len(running), running[0].Name)
	}
	// Nothing runs any more: a terminal phase may now be shown.
	a.status.ContainersStopped(uid)
	if pod == nil {
		return nil
	}
	if reason, msg := a.rejection(pod); reason != "" {
		// A refused pod keeps the status of its refusal; one killed
		// before its first sync wrote it gets it now.
		if _, ok := a.status.PodStatus(pod.UID); !ok {
			a.refuse(pod, reason, msg)
		}
		return nil
	}
	if skipsFinalStatus(a.status, uid) {
		return nil
	}
	prev := a.status.WithCachedStatus(pod)
	now := a.d.Clock.Now()
	s := status.Generate(prev, after, nil, a.pods.probes.ForPod(pod, after), a.nodeAddrs(ctx, pod), now)
	s = status.WithResources(s, a.cm.alloc.Allocated(pod), after)
	a.status.SetPodStatus(pod, status.Terminate(prev, s, now))
	return nil
}

// SyncTerminatedPod finishes a stopped pod: a deleted API pod may now be
// removed from the API.
func (a *Agent) SyncTerminatedPod(_ context.Context, uid types.UID, pod *corev1.Pod) error {
	a.unseen.Forget(uid)
	a.admission.book.ForgetUnsupported(uid)
	if cur, desired := a.merger.Pod(uid); desired && cur.DeletionTimestamp == nil {
		// Ended but still in the API: its directory stays till it is gone.
		a.pods.volumes.UnmountPod(uid)
	} else {
		a.pods.volumes.RemovePod(uid)
	}
	if a.pods.userns != nil {
		a.pods.userns.Release(uid)
	}
	a.pods.probes.RemovePod(uid)
	a.removePodCgroup(uid)
	if a.cm.devices != nil {
		a.cm.devices.Free(uid)
	}
	if err := a.cm.alloc.Remove(uid); err != nil {
		a.d.Log.Warn("forgetting a terminated pod's allocation failed; housekeeping will retry", "uid", string(uid), "error", err.Error())
	}
	if pod != nil {
		a.releaseResources(pod)
	}
	if pod != nil {
		a.cfg.Metrics.ForgetProbes(metrics.ProbeTarget{Namespace: pod.Namespace, Pod: pod.Name, PodUID: string(uid)})
	}
	if pod == nil || podutil.IsStaticPod(pod) {
		return nil
	}
	a.deleteIfDeleted(uid)
	return nil
}

// deleteIfDeleted lets the status manager delete a terminated API pod from
// the API once a user deleted it, judged by the newest object (the pod
// worker's copy froze when termination began), or once it is gone from
// the API already (nothing to write then).
func (a *Agent) deleteIfDeleted(uid types.UID) {
	cur, desired := a.merger.Pod(uid)
	if !desired || cur.DeletionTimestamp != nil {
		a.status.SetPodDeletable(uid)
	}
}

// nodeAddrs is what the node contributes to pod's status: its addresses,
// the runtime's name and, for a pod with a read-only mount asking for
// recursive read-only mode, whether the pod's runtime handler supports it
// (the kubelet's runtimeClassSupportsRecursiveReadOnlyMounts), which its
// volumeMounts' status reports.
func (a *Agent) nodeAddrs(ctx context.Context, pod *corev1.Pod) status.NodeAddrs {
	n := status.NodeAddrs{HostIP: a.cfg.Node.HostIP, HostIPs: a.cfg.Node.HostIPs, RuntimeType: a.cfg.RuntimeType}
	if status.AsksRecursiveReadOnly(pod) {
		n.RecursiveReadOnlyMounts = a.exec.HandlerSupportsRecursiveReadOnly(ctx, pod)
	}
	return n
}

// expect records the containers just started (res.Started) until the
// runtime's view shows them.
func (a *Agent) expect(uid types.UID, started []runtimesync.Started) {
	cs := make([]unseen.Container, 0, len(started))
	for _, s := range started {
		cs = append(cs, unseen.Container{Name: s.Name, ID: s.ID})
	}
	a.unseen.Expect(uid, a.d.Clock.Now(), cs...)
}

// viewIsStale reports whether st lacks a container this agent started
// (unseen.Tracker.Stale), logging those it gives up waiting for.
func (a *Agent) viewIsStale(pod *corev1.Pod, st *podstate.PodStatus) bool {
	stale, givenUp := a.unseen.Stale(pod.UID, st, a.d.Clock.Now())
	for _, c := range givenUp {
		a.d.Log.Warn("started container never showed up in the runtime",
			"pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID), "container", c.Name, "id", c.ID)
	}
	return stale
}

// reasons is why the syncs of pod uid left its containers waiting, as the
// status generator reads them.
func (a *Agent) reasons(uid types.UID) map[string]status.Waiting {
	rs := a.exec.Reasons(string(uid))
	out := make(map[string]status.Waiting, len(rs))
	for name, w := range rs {
		out[name] = status.Waiting{Reason: w.Reason, Message: w.Message}
	}
	return out
}

// sandboxReady sets pod's PodReadyToStartContainers condition True once
// its new sandbox runs, as the kubelet's OnPodSandboxReady does before it
// pulls the pod's images.
func (a *Agent) sandboxReady(pod *corev1.Pod) {
	prev := a.status.WithCachedStatus(pod)
	a.status.SetPodStatus(pod, status.WithSandboxReady(prev.Status, pod.Generation, a.d.Clock.Now()))
}
