package agent

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/metrics"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/podworkers"
	"github.com/lockstep-dev/lockstep/node/runtimesync"
	"github.com/lockstep-dev/lockstep/node/status"
)

// expectationTimeout bounds how long a started container may stay missing
// from the runtime's view before the agent stops waiting for it.
const expectationTimeout = time.Minute

var _ podworkers.Syncer = (*Agent)(nil)

// since is the oldest runtime view a step may act on: after the worker's
// last action, and never from before this agent started.
func (a *Agent) since(lastSync time.Time) time.Time {
	if lastSync.Before(a.startTime) {
		return a.startTime
	}
	return lastSync
}

// SyncPod is the syncing step of a pod's worker.
func (a *Agent) SyncPod(ctx context.Context, pod *corev1.Pod, lastSync time.Time) (podworkers.SyncResult, error) {
	unsupported := a.checkUnsupported(pod)
	if reason, msg := a.rejection(pod); reason != "" {
		return a.refuse(pod, reason, msg), nil
	}
	if err := a.waitForVolumes(ctx, pod); err != nil {
		return podworkers.SyncResult{}, err
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
		return a.deadlineExceeded(pod, prev, st), nil
	}
	// run is the pod with the resources it was allocated (a resize the
	// node has not accepted yet waits, PodResizePending).
	run, rz, resized := pod, status.Resize{}, false
	if !terminal {
		run, rz = a.allocate(pod, prev.Status.Conditions)
		a.flushAllocations(pod)
		a.probes.AddPod(pod)
		if err := a.ensurePodCgroup(run); err != nil {
			return podworkers.SyncResult{}, err
		}
		rz.Error, resized = a.resizeInPlace(ctx, run, st)
	}
	res, syncErr := a.exec.Execute(ctx, run, st, terminal, a.unhealthy(pod), a.probes.ForPod(pod, st).Started)
	a.expect(pod.UID, res.Started)
	view := st
	if !terminal {
		view = a.finishResize(ctx, run, st, &rz, resized)
	}

	waiting := make(map[string]status.Waiting, len(res.Waiting))
	for name, w := range res.Waiting {
		waiting[name] = status.Waiting{Reason: w.Reason, Message: w.Message}
	}
	now := a.d.Clock.Now()
	s := withUnsupportedMessage(status.Generate(prev, st, waiting, a.probes.ForPod(pod, st), a.nodeAddrs(), now), unsupported)
	if !terminal {
		s = a.resizeStatus(run, prev.Status.Conditions, s, rz, view)
	}
	if s.Phase == corev1.PodRunning && prev.Status.Phase != corev1.PodRunning && !pod.CreationTimestamp.IsZero() {
		a.cfg.Metrics.ObservePodStartDuration(now.Sub(pod.CreationTimestamp.Time))
	}
	a.status.SetPodStatus(pod, s)
	out := podworkers.SyncResult{Terminal: podutil.IsTerminal(s.Phase), RequeueAfter: res.Actions.RetryAfter}
	if resizing(s) && (out.RequeueAfter == 0 || out.RequeueAfter > a.cfg.SyncTick) {
		// Look again soon: the resize completes (or is retried) then.
		out.RequeueAfter = a.cfg.SyncTick
	}
	if s.StartTime != nil && !out.Terminal {
		// Wake at the active deadline, if it comes before the next sync.
		if left, ok := status.ActiveDeadline(pod, &s.StartTime.Time, now); ok && (out.RequeueAfter == 0 || left < out.RequeueAfter) {
			out.RequeueAfter = max(left, time.Millisecond)
		}
	}
	return out, syncErr
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
func (a *Agent) deadlineExceeded(pod, prev *corev1.Pod, st *podstate.PodStatus) podworkers.SyncResult {
	if a.d.API.Events != nil {
		ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
		a.d.API.Events.Event(ref, corev1.EventTypeNormal, status.ReasonDeadlineExceeded, status.MessageDeadlineExceeded)
	}
	a.d.Log.Info("pod exceeded its active deadline", "pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID),
		"activeDeadlineSeconds", *pod.Spec.ActiveDeadlineSeconds)
	now := a.d.Clock.Now()
	s := status.Generate(prev, st, nil, a.probes.ForPod(pod, st), a.nodeAddrs(), now)
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
	for _, uid := range a.pleg.Cache().UIDs() {
		if uid == pod.UID {
			continue
		}
		st, ok := a.pleg.Cache().Get(uid)
		if ok && st.Name == pod.Name && st.Namespace == pod.Namespace && len(st.Running()) > 0 {
			return uid, true
		}
	}
	return "", false
}

// SyncTerminatingPod stops every container of the pod within the grace
// period and confirms nothing still runs.
func (a *Agent) SyncTerminatingPod(ctx context.Context, uid types.UID, pod *corev1.Pod, grace int64, lastSync time.Time) error {
	a.probes.Terminating(uid)
	a.forgetAdmission(uid)
	if pod != nil {
		// An evicted pod is Failed (reason Evicted) before its containers
		// stop, as the kubelet writes it: a restarted agent finds it
		// terminal and never runs it again.
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
	if err := a.exec.KillPod(ctx, pod, a.withUnseen(uid, st), grace); err != nil {
		return err
	}
	if err := a.pleg.RefreshPod(ctx, uid); err != nil {
		return fmt.Errorf("refresh terminating pod %s: %w", uid, err)
	}
	after, _ := a.pleg.Cache().Get(uid)
	if running := after.Running(); len(running) > 0 {
		return fmt.Errorf("pod %s still has %d running containers (first: %q)", uid, len(running), running[0].Name)
	}
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
	s := status.Generate(prev, after, nil, a.probes.ForPod(pod, after), a.nodeAddrs(), now)
	s = status.WithResources(s, a.alloc.Allocated(pod), after)
	a.status.SetPodStatus(pod, status.Terminate(prev, s, now))
	return nil
}

// SyncTerminatedPod finishes a stopped pod: a deleted API pod may now be
// removed from the API.
func (a *Agent) SyncTerminatedPod(_ context.Context, uid types.UID, pod *corev1.Pod) error {
	a.mu.Lock()
	delete(a.expected, uid)
	a.mu.Unlock()
	a.forgetUnsupported(uid)
	a.volumes.RemovePod(uid)
	if a.userns != nil {
		a.userns.Release(uid)
	}
	a.probes.RemovePod(uid)
	a.removePodCgroup(uid)
	if a.devices != nil {
		a.devices.Free(uid)
	}
	if err := a.alloc.Remove(uid); err != nil {
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

func (a *Agent) nodeAddrs() status.NodeAddrs {
	return status.NodeAddrs{HostIP: a.cfg.Node.HostIP, HostIPs: a.cfg.Node.HostIPs, RuntimeType: a.cfg.RuntimeType}
}

// expectation is a container instance this agent started and has not yet
// seen in the runtime's view.
type expectation struct {
	id    string
	since time.Time
}

// expect records containers just started, until the runtime view shows them.
func (a *Agent) expect(uid types.UID, started []runtimesync.Started) {
	if len(started) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.expected[uid]
	if m == nil {
		m = map[string]expectation{}
		a.expected[uid] = m
	}
	for _, s := range started {
		m[s.Name] = expectation{id: s.ID, since: a.d.Clock.Now()}
	}
}

// withUnseen returns st plus, in state unknown, the containers this agent
// started that st does not show yet (a lagging view): a terminating pod
// stops them too, by ID, so none runs on unseen after the pod terminated
// (with its volumes torn down).
func (a *Agent) withUnseen(uid types.UID, st *podstate.PodStatus) *podstate.PodStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.expected[uid]
	if len(m) == 0 {
		return st
	}
	out := *st
	out.Containers = slices.Clone(st.Containers)
	for _, name := range slices.Sorted(maps.Keys(m)) {
		e := m[name]
		if _, ok := st.Instance(e.id); !ok {
			out.Containers = append(out.Containers, podstate.Container{ID: e.id, Name: name, State: podstate.ContainerUnknown})
		}
	}
	return &out
}

// viewIsStale reports whether st lacks a container this agent started
// (and forgets the expectations st satisfies).
func (a *Agent) viewIsStale(pod *corev1.Pod, st *podstate.PodStatus) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.expected[pod.UID]
	stale := false
	for _, name := range slices.Sorted(maps.Keys(m)) {
		e := m[name]
		found := slices.ContainsFunc(st.Containers, func(c podstate.Container) bool { return c.ID == e.id })
		switch {
		case found:
			delete(m, name)
		case a.d.Clock.Since(e.since) > expectationTimeout:
			a.d.Log.Warn("started container never showed up in the runtime",
				"pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID), "container", name, "id", e.id)
			delete(m, name)
		default:
			stale = true
		}
	}
	if len(m) == 0 {
		delete(a.expected, pod.UID)
	}
	return stale
}
