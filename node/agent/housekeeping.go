package agent

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
		gc := lastGC.IsZero() || a.d.Clock.Since(lastGC) >= containerGCPeriod
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
	for _, uid := range a.workers.UIDs() {
		known[uid] = true
		pod, desired := a.pods.get(uid)
		if desired {
			if st, ok := a.pleg.Cache().Get(uid); ok {
				if state, _ := a.workers.State(uid); state == podworkers.Syncing {
					live = append(live, st)
				}
			}
			if podutil.IsStaticPod(pod) {
				a.ensureMirror(ctx, uid)
			}
			continue
		}
		if !a.workers.IsFinished(uid) {
			continue // still terminating
		}
		if st, ok := a.pleg.Cache().Get(uid); ok {
			if err := a.exec.RemovePod(ctx, st); err != nil {
				a.d.Log.Warn("removing a finished pod's containers failed; will retry", "uid", string(uid), "error", err.Error())
				continue
			}
			if err := a.pleg.UpdatePod(ctx, uid); err != nil {
				continue
			}
		}
		if err := a.workers.Forget(uid); err != nil {
			continue
		}
		a.status.RemovePod(uid)
		a.exec.ForgetPod(string(uid))
		a.mu.Lock()
		delete(a.expected, uid)
		mirrored := a.mirrorsSet[uid]
		delete(a.mirrorsSet, uid)
		a.mu.Unlock()
		if mirrored {
			a.deleteMirror(ctx, uid)
		}
		a.d.Log.Info("pod removed", "uid", string(uid))
	}
	if gc {
		if err := a.exec.CollectGarbage(ctx, live); err != nil {
			a.d.Log.Warn("container garbage collection failed", "error", err.Error())
		}
	}
	a.reportRunning()
	// Orphans: runtime pods no source wants and no worker owns.
	for _, uid := range a.pleg.Cache().UIDs() {
		if known[uid] {
			continue
		}
		if _, desired := a.pods.get(uid); desired {
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

// ensureMirror creates the mirror pod of a static pod in the API, replacing
// a stale mirror of an earlier version of the manifest. It looks for an
// existing mirror in the node's own pod list: under Node authorization a
// node may not even read a pod that does not exist yet.
func (a *Agent) ensureMirror(ctx context.Context, uid types.UID) {
	a.mu.Lock()
	done := a.mirrorsSet[uid]
	a.mu.Unlock()
	pod, ok := a.pods.get(uid)
	if done || !ok || a.d.API.Pods == nil {
		return
	}
	log := a.d.Log.With("pod", pod.Namespace+"/"+pod.Name, "uid", string(uid))
	pods, _, err := a.d.API.Pods.ListPods(ctx, a.cfg.NodeName)
	if err != nil {
		log.Warn("listing the node's pods to find the mirror pod failed", "error", err.Error())
		return
	}
	for _, existing := range pods {
		if existing.Namespace != pod.Namespace || existing.Name != pod.Name {
			continue
		}
		if hash, ok := podsource.StaticPodUIDFromMirror(existing); ok && hash == uid {
			a.markMirror(uid)
			return
		}
		if err := a.d.API.Pods.DeletePod(ctx, existing.Namespace, existing.Name, existing.UID); err != nil && !apierrors.IsNotFound(err) {
			log.Warn("replacing a stale mirror pod failed", "error", err.Error())
			return
		}
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
	if _, err := a.d.API.Pods.CreatePod(ctx, mirror); err != nil && !apierrors.IsAlreadyExists(err) {
		log.Warn("creating mirror pod failed", "error", err.Error())
		return
	}
	log.Info("mirror pod created")
	a.markMirror(uid)
}

func (a *Agent) markMirror(uid types.UID) {
	a.mu.Lock()
	a.mirrorsSet[uid] = true
	a.mu.Unlock()
}

// deleteMirror removes the mirror pod of a static pod that is gone. The
// name is recovered from the mirror pods the API holds for this node.
func (a *Agent) deleteMirror(ctx context.Context, uid types.UID) {
	pods, _, err := a.d.API.Pods.ListPods(ctx, a.cfg.NodeName)
	if err != nil {
		return
	}
	for _, p := range pods {
		if hash, ok := podsource.StaticPodUIDFromMirror(p); ok && hash == uid {
			if err := a.d.API.Pods.DeletePod(ctx, p.Namespace, p.Name, p.UID); err != nil && !apierrors.IsNotFound(err) {
				a.d.Log.Warn("deleting mirror pod failed", "pod", p.Namespace+"/"+p.Name, "error", err.Error())
			}
		}
	}
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
