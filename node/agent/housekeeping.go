package agent

import (
	"context"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/metrics"
	"github.com/lockstep-dev/lockstep/node/podsource"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/podworkers"
)

// containerGCPeriod is how often dead containers are collected (the
// upstream kubelet's ContainerGCPeriod), less often than housekeeping.
const containerGCPeriod = time.Minute

func (a *Agent) housekeepingLoop(ctx context.Context) {
	t := a.d.Tasks.NewTicker("housekeeping", a.cfg.HousekeepingPeriod)
	defer t.Stop()
	var lastGC time.Time
	for t.Wait(ctx) == nil {
		if !a.merger.AllSeen() {
			continue // orphans are only orphans once every source has spoken
		}
		if a.d.Fault(deps.FaultHousekeepingLate) {
			continue // this round late by one period (a busy node)
		}
		gc := lastGC.IsZero() || a.d.Clock.Since(lastGC) >= containerGCPeriod
		if gc && a.d.Fault(deps.FaultContainerGCDeferred) {
			gc = false // late by one housekeeping period
		}
		if gc {
			lastGC = a.d.Clock.Now()
		}
		a.housekeeping(ctx, gc)
	}
}

// housekeeping removes what no source wants any more: finished pods'
// runtime objects and workers, orphaned runtime pods, and (when gc is set)
// dead containers of live pods; and keeps mirror pods in step with static
// pods.
func (a *Agent) housekeeping(ctx context.Context, gc bool) {
	known := map[types.UID]bool{}
	var live []*podstate.PodStatus
	mirrors := a.merger.MirrorPods()
	for _, uid := range a.workers.UIDs() {
		known[uid] = true
		pod, desired := a.merger.Pod(uid)
		if desired {
			if st, ok := a.pleg.Cache().Get(uid); ok {
				if state, _ := a.workers.State(uid); state == podworkers.Syncing {
					live = append(live, st)
				}
			}
			if _, earlier := a.otherStaticInstance(pod); podutil.IsStaticPod(pod) && !earlier {
				// Not while an earlier version still runs: its mirror
				// stays until this version may start, as the kubelet
				// replaces a mirror only when the new version syncs.
				a.ensureMirror(ctx, pod, mirrors)
			}
			continue
		}
		if a.workers.IsFinished(uid) { // else still terminating
			a.removeFinished(ctx, uid)
		}
	}
	if gc {
		if err := a.exec.CollectGarbage(ctx, live); err != nil {
			a.d.Log.Warn("container garbage collection failed", "error", err.Error())
		}
	}
	a.deleteOrphanedMirrors(ctx, mirrors)
	a.pods.volumes.CleanupOrphans(a.knownPod)
	if a.pods.userns != nil {
		a.pods.userns.CleanupOrphans(a.knownPod)
	}
	a.cgroupHousekeeping()
	if err := a.cm.alloc.RemoveOrphans(a.mayRunPod); err != nil {
		a.d.Log.Warn("forgetting orphaned pod allocations failed; will retry", "error", err.Error())
	}
	a.resourceHousekeeping()
	a.deviceHousekeeping()
	a.reportRunning()
	a.killOrphans(known)
}

// removeFinished removes a finished pod no source wants: its runtime
// objects, its worker, its status and what the agent kept of it; a
// failure leaves it for the next housekeeping.
func (a *Agent) removeFinished(ctx context.Context, uid types.UID) {
	if st, ok := a.pleg.Cache().Get(uid); ok {
		if err := a.exec.RemovePod(ctx, st); err != nil {
			a.d.Log.Warn("removing a finished pod's containers failed; will retry", "uid", string(uid), "error", err.Error())
			return
		}
		if err := a.pleg.RefreshPod(ctx, uid); err != nil {
			return
		}
	}
	if err := a.workers.Forget(uid); err != nil {
		return
	}
	a.status.RemovePod(uid)
	a.exec.ForgetPod(string(uid))
	a.unseen.Forget(uid)
	a.admission.book.Forget(uid)
	a.d.Log.Info("pod removed", "uid", string(uid))
}

// killOrphans kills the runtime pods no source wants and no worker owns
// (known: the pods with a worker), at once.
func (a *Agent) killOrphans(known map[types.UID]bool) {
	for _, uid := range a.pleg.Cache().UIDs() {
		if known[uid] {
			continue
		}
		if _, desired := a.merger.Pod(uid); desired {
			continue
		}
		st, ok := a.pleg.Cache().Get(uid)
		if !ok || len(st.Containers) == 0 && len(st.Sandboxes) == 0 {
			continue
		}
		a.d.Log.Info("killing orphaned runtime pod", "pod", st.Namespace+"/"+st.Name, "uid", string(uid))
		zero := int64(0)
		a.workers.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: uid, GracePeriod: &zero, Reason: "orphaned"})
	}
}

// ensureMirror keeps the mirror pod of a static pod in the API, on every
// housekeeping: one is created when there is none, and one that mirrors
// another version of the manifest (its hash differs) or that a user
// deleted (it has a deletion timestamp) is deleted and created again.
// mirrors is the API source's view of the mirror pods by full name, so a
// mirror pod that is in place costs no API call.
func (a *Agent) ensureMirror(ctx context.Context, pod *corev1.Pod, mirrors map[string]*corev1.Pod) {
	if a.d.API.Pods == nil {
		return
	}
	log := a.d.Log.With("pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID))
	if existing := mirrors[pod.Namespace+"/"+pod.Name]; existing != nil {
		if mirrorInPlace(existing, pod) {
			return
		}
		if err := a.d.API.Pods.DeletePod(ctx, existing.Namespace, existing.Name, existing.UID); err != nil && !apierrors.IsNotFound(err) {
			log.Warn("replacing a stale or deleted mirror pod failed", "mirror", string(existing.UID), "error", err.Error())
			return
		}
		log.Info("stale or deleted mirror pod removed", "mirror", string(existing.UID))
	}
	mirror := podsource.MirrorPodFor(pod)
	if a.d.API.Nodes != nil {
		// NodeRestriction admits a node's mirror pods only when the node
		// itself is their controller owner.
		node, err := a.d.API.Nodes.GetNode(ctx, a.cfg.NodeName)
		if err != nil {
			log.Warn("reading the node for the mirror pod's owner failed", "error", err.Error())
			return
		}
		controller := true
		mirror.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: &controller}}
	}
	if _, err := a.d.API.Pods.CreatePod(ctx, mirror); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			log.Warn("creating mirror pod failed", "error", err.Error())
		}
		return // already there: the view lags behind; the next round checks it
	}
	log.Info("mirror pod created")
}

// mirrorInPlace reports whether existing is the mirror pod the static pod
// wants: it mirrors this version of the manifest (its hash is the static
// pod's UID) and nobody deleted it.
func mirrorInPlace(existing, static *corev1.Pod) bool {
	hash, _ := podsource.StaticPodUIDFromMirror(existing)
	return (hash == static.UID || brokenKeepsStaleMirror) && existing.DeletionTimestamp == nil
}

// deleteOrphanedMirrors deletes the mirror pods whose static pod is gone
// (mirrorOrphaned).
func (a *Agent) deleteOrphanedMirrors(ctx context.Context, mirrors map[string]*corev1.Pod) {
	if len(mirrors) == 0 {
		return
	}
	static := staticNames(a.merger.Pods())
	inSource := func(hash types.UID) bool {
		return a.merger.Has(podsource.SourceFile, hash) || a.merger.Has(podsource.SourceHTTP, hash)
	}
	running := func(hash types.UID) bool {
		_, ok := a.workers.State(hash)
		return ok && !a.workers.IsFinished(hash)
	}
	for _, name := range slices.Sorted(maps.Keys(mirrors)) {
		m := mirrors[name]
		if !mirrorOrphaned(name, m, static, inSource, running) {
			continue
		}
		if err := a.d.API.Pods.DeletePod(ctx, m.Namespace, m.Name, m.UID); err != nil && !apierrors.IsNotFound(err) {
			a.d.Log.Warn("deleting orphaned mirror pod failed", "pod", name, "error", err.Error())
			continue
		}
		a.d.Log.Info("orphaned mirror pod deleted", "pod", name)
	}
}

// staticNames are the full names of the static pods among pods.
func staticNames(pods []*corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		if podutil.IsStaticPod(p) {
			out[p.Namespace+"/"+p.Name] = true
		}
	}
	return out
}

// mirrorOrphaned reports whether mirror (full name name) has lost its
// static pod: no static pod of that full name is desired (static), no
// static source has the one it mirrors (inSource: it is on its way to the
// pod workers), and no worker runs it (running: a static pod still
// terminating keeps its mirror).
func mirrorOrphaned(name string, mirror *corev1.Pod, static map[string]bool, inSource, running func(types.UID) bool) bool {
	if static[name] {
		return false
	}
	hash, _ := podsource.StaticPodUIDFromMirror(mirror)
	return !inSource(hash) && !running(hash)
}

// reportRunning updates the running pods and containers gauges from the
// runtime's view.
func (a *Agent) reportRunning() {
	if a.cfg.Metrics == nil {
		return
	}
	uids := a.pleg.Cache().UIDs()
	statuses := make([]*podstate.PodStatus, 0, len(uids))
	for _, uid := range uids {
		if st, ok := a.pleg.Cache().Get(uid); ok {
			statuses = append(statuses, st)
		}
	}
	a.cfg.Metrics.SetRunning(metrics.CountRunning(statuses))
}
