package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/activepods"
	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/eviction"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/podworkers"
	"github.com/lockstep-dev/lockstep/node/shutdown"
	"github.com/lockstep-dev/lockstep/node/status"
)

// withEvictionReserve adds what the hard eviction thresholds keep free to
// the node's reserved resources, so that allocatable (node status,
// admission, the downward API) is capacity minus reserved minus the hard
// memory.available and nodefs.available thresholds, as the kubelet's.
func withEvictionReserve(machine deps.Machine, nc nodestatus.Config, ts []eviction.Threshold) corev1.ResourceList {
	reserved := nc.Reserved.DeepCopy()
	if machine == nil || len(ts) == 0 {
		return reserved
	}
	// Built before any task runs; both machines answer without blocking.
	info, err := machine.Info(context.Background())
	if err != nil {
		return reserved
	}
	if reserved == nil {
		reserved = corev1.ResourceList{}
	}
	add := func(name corev1.ResourceName, v int64) {
		if v <= 0 {
			return
		}
		q := reserved[name].DeepCopy()
		q.Add(*resource.NewQuantity(v, resource.BinarySI))
		reserved[name] = q
	}
	add(corev1.ResourceMemory, eviction.HardMemoryReservation(ts, int64(info.MemoryBytes)))
	if u, err := machine.Usage(context.Background()); err == nil && u.NodeFSCapacityBytes > 0 {
		add(corev1.ResourceEphemeralStorage, eviction.HardNodeFsReservation(ts, int64(u.NodeFSCapacityBytes)))
	}
	return reserved
}

// nodeMaxAge is how old admission's view of the Node's labels and taints
// may be when the Node is not watched (API.NodeWatch nil): older, the Node
// is read again before a pod is admitted. Node status writes are patches
// that read nothing, so without this a taint or label an administrator
// sets would never be seen. Idle, no read is made; under churn at most one
// per period.
const nodeMaxAge = 10 * time.Second

// nodeWatchRetry is how long the node watch waits before it opens again
// after a failure (a watch the apiserver closed normally reopens at once).
const nodeWatchRetry = time.Second

// watchNode keeps admission's copy of the Node current from a watch of
// it, as the kubelet's node informer does, until ctx ends.
func (a *Agent) watchNode(ctx context.Context) {
	for ctx.Err() == nil {
		err := a.followNode(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, io.EOF) {
			continue
		}
		a.d.Log.Warn("node watch failed; opening it again", "node", a.cfg.NodeName, "error", err.Error(), "retry", nodeWatchRetry)
		if a.d.Tasks.Sleep(ctx, nodeWatchRetry) != nil {
			return
		}
	}
}

// followNode opens one watch of the Node and records each state it
// reports until the watch ends.
func (a *Agent) followNode(ctx context.Context) error {
	w, err := a.d.API.NodeWatch.WatchNode(ctx, a.cfg.NodeName)
	if err != nil {
		return fmt.Errorf("watch node %s: %w", a.cfg.NodeName, err)
	}
	defer w.Stop()
	for {
		n, err := w.Next(ctx)
		if err != nil {
			return err
		}
		if n == nil { // not registered yet, or deleted
			continue
		}
		a.mu.Lock()
		a.nodeRead, a.nodeReadAt = n, a.d.Clock.Now()
		a.mu.Unlock()
	}
}

// admissionNode is the node as admission sees it: the Node from its watch
// (or, unwatched, read from the API at most nodeMaxAge ago) for labels
// and taints, else the one the node status last wrote, else the labels
// the node registers with.
func (a *Agent) admissionNode() admission.Node {
	n := admission.Node{Name: a.cfg.NodeName, Allocatable: a.cfg.Node.Allocatable}
	if n.Allocatable == nil {
		n.Allocatable = corev1.ResourceList{}
	}
	maxPods := a.cfg.NodeStatus.MaxPods
	if maxPods <= 0 {
		maxPods = nodestatus.DefaultMaxPods
	}
	n.Allocatable = n.Allocatable.DeepCopy()
	n.Allocatable[corev1.ResourcePods] = *resource.NewQuantity(int64(maxPods), resource.DecimalSI)
	if a.devices != nil {
		maps.Copy(n.Allocatable, a.devices.AdmissionAllocatable())
	}
	if node := a.currentNode(); node != nil {
		n.Labels, n.Taints = node.Labels, node.Spec.Taints
		return n
	}
	if a.node != nil {
		if node := a.node.Node(); node != nil {
			n.Labels, n.Taints = node.Labels, node.Spec.Taints
			return n
		}
	}
	var info deps.MachineInfo
	if a.d.Machine != nil {
		info, _ = a.d.Machine.Info(context.Background())
	}
	nc := a.cfg.NodeStatus
	nc.NodeName = a.cfg.NodeName
	n.Labels = nodestatus.Labels(nc, info)
	return n
}

// nodeReadTimeout bounds admission's read of the Node.
const nodeReadTimeout = 5 * time.Second

// currentNode is the Node as its watch last reported it, or, when it is
// not watched, as read from the API at most nodeMaxAge ago (reading it
// again when it is older); nil when none is known.
func (a *Agent) currentNode() *corev1.Node {
	now := a.d.Clock.Now()
	a.mu.Lock()
	node, at := a.nodeRead, a.nodeReadAt
	a.mu.Unlock()
	if a.d.API.NodeWatch != nil || (node != nil && now.Sub(at) < nodeMaxAge) {
		return node
	}
	fresh, ok := a.readNode()
	if !ok {
		return node
	}
	return fresh
}

// readNode reads the Node from the API now and keeps it for admission.
func (a *Agent) readNode() (*corev1.Node, bool) {
	if a.d.API.Nodes == nil {
		return nil, false
	}
	ctx, cancel := a.d.Clock.WithTimeout(context.Background(), nodeReadTimeout)
	defer cancel()
	n, err := a.d.API.Nodes.GetNode(ctx, a.cfg.NodeName)
	if err != nil {
		a.d.Log.Warn("admission could not read the node; deciding on the last one read", "error", err.Error())
		return nil, false
	}
	a.mu.Lock()
	a.nodeRead, a.nodeReadAt = n, a.d.Clock.Now()
	a.mu.Unlock()
	return n, true
}

// admit decides whether a pod new to the agent may run, as the kubelet's
// admission: under node pressure (the eviction manager's conditions), then
// against the node (admission.AdmitBeside) beside the pods admitted
// before it. A refused pod is remembered: its sync fails it (Failed, the
// reason and message) and starts nothing. Pods already terminal or being
// deleted are not admitted (they will not run) and count for nothing.
func (a *Agent) admit(pod *corev1.Pod) {
	if podutil.IsTerminal(pod.Status.Phase) || pod.DeletionTimestamp != nil {
		return
	}
	a.mu.Lock()
	_, seen := a.admitted.Pod(pod.UID)
	_, refused := a.rejected[pod.UID]
	a.mu.Unlock()
	if seen || refused {
		return
	}
	// Admitted with the resources it was allocated before (a restarted
	// agent): a resize it had deferred is not accepted by the way.
	pod = a.alloc.Allocated(pod)
	d := admission.AdmitUnderPressure(pod, podspec.QOSClass(pod), a.evictions.Conditions())
	if a.shutdown.ShuttingDown() {
		d = admission.Decision{Reason: shutdown.NotAdmittedReason, Message: shutdown.NotAdmittedMessage}
	}
	if d.Admitted() {
		node := a.admissionNode()
		d = a.admitToNode(pod, node)
		if d.Reason == admission.ReasonNodeAffinity || d.Reason == admission.ReasonTaintToleration {
			// The watched (or read) Node may be a moment behind its labels
			// and taints: read it now and decide again, as the kubelet
			// does before refusing a pod for its node affinity.
			if fresh, ok := a.readNode(); ok {
				node.Labels, node.Taints = fresh.Labels, fresh.Spec.Taints
				d = a.admitToNode(pod, node)
			}
		}
		if !d.Admitted() {
			// Only a pod that does not fit needs the admitted pods listed.
			if victims, ok := admission.PodsToPreempt(pod, podspec.QOSClass, node, a.admittedPods()); ok {
				a.preempt(pod, victims)
				d = admission.Decision{}
			}
		}
		if d.Admitted() && a.devices != nil {
			if reason, msg, ok := a.devices.Admit(pod, a.holdingResources); !ok {
				d = admission.Decision{Reason: reason, Message: msg}
			}
		}
		if d.Admitted() {
			d = a.admitResources(pod)
		}
	}
	if !d.Admitted() {
		a.d.Log.Info("pod refused admission", "pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID), "reason", d.Reason, "message", d.Message)
		a.mu.Lock()
		a.rejected[pod.UID] = d
		a.mu.Unlock()
		return
	}
	a.mu.Lock()
	a.admitted.Set(pod)
	a.mu.Unlock()
	a.recordAllocation(pod)
}

// admitToNode decides on pod against node beside what the admitted pods
// use (admission.AdmitBeside, at the cost of the pod's own size).
func (a *Agent) admitToNode(pod *corev1.Pod, node admission.Node) admission.Decision {
	a.mu.Lock()
	defer a.mu.Unlock()
	return admission.AdmitBeside(pod, node, a.admitted.Usage())
}

// preempt stops the admitted victims so that the critical pod fits, as
// the kubelet's critical pod admission does: each is Failed, reason
// Preempting, with a DisruptionTarget condition, stopped with its own
// grace period, and never restarted.
func (a *Agent) preempt(pod *corev1.Pod, victims []*corev1.Pod) {
	for _, v := range victims {
		a.d.Log.Info("preempting pod to admit a critical pod", "pod", v.Namespace+"/"+v.Name, "uid", string(v.UID),
			"for", pod.Namespace+"/"+pod.Name)
		if a.d.API.Events != nil {
			ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: v.Namespace, Name: v.Name, UID: v.UID}
			a.d.API.Events.Event(ref, corev1.EventTypeWarning, admission.ReasonPreempting, admission.PreemptedMessage)
		}
		cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: corev1.PodReasonTerminationByKubelet, Message: admission.PreemptedConditionMessage, ObservedGeneration: v.Generation}
		a.stopAndFail(v, nil, stopNote{reason: admission.ReasonPreempting, message: admission.PreemptedMessage, condition: cond})
	}
}

// admittedPodList lists the admitted pods for the stats sampler, which
// measures their volumes and logs.
type admittedPodList struct{ a *Agent }

// ActivePods are the admitted pods, oldest first (activepods.Admitted).
func (l admittedPodList) ActivePods() []*corev1.Pod { return l.a.admittedPods() }

// admittedPods are the pods admitted and still counting against the node
// (not terminating), oldest first (activepods.Admitted): O(N log N), for
// the callers that need the pods themselves (preemption, eviction,
// resize, stats), not for an admission that fits.
func (a *Agent) admittedPods() []*corev1.Pod { return activepods.Admitted(a.podSets()) }

// admittedUnordered are the admitted pods in no particular order.
func (a *Agent) admittedUnordered() []*corev1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.admitted.Pods()
}

// forgetAdmission drops a pod that stopped counting against the node (it
// is terminating).
func (a *Agent) forgetAdmission(uid types.UID) {
	a.mu.Lock()
	was := a.admitted.Remove(uid)
	delete(a.pendingResizes, uid)
	a.mu.Unlock()
	if was {
		// Its resources are free again: deferred resizes may fit now.
		a.wakePendingResizes(uid)
	}
}

// admissionRejection is why admission refused pod, if it did.
func (a *Agent) admissionRejection(uid types.UID) (admission.Decision, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	d, ok := a.rejected[uid]
	return d, ok
}

// evictionPods is the agent's side of the eviction manager.
type evictionPods struct{ a *Agent }

// ActivePods are the pods the eviction manager may evict
// (activepods.Evictable).
func (p evictionPods) ActivePods() []*corev1.Pod { return activepods.Evictable(p.a.podSets()) }

// Evict stops the pod with grace and fails it with the eviction's
// message and condition (see SyncTerminatingPod).
func (p evictionPods) Evict(pod *corev1.Pod, grace int64, message string, cond corev1.PodCondition) {
	p.a.stopAndFail(pod, &grace, stopNote{reason: eviction.Reason, message: message, condition: cond})
}

// stopAndFail stops an admitted pod (with grace, nil: its own) and fails
// it as note says (see SyncTerminatingPod).
func (a *Agent) stopAndFail(pod *corev1.Pod, grace *int64, note stopNote) {
	a.mu.Lock()
	a.evicted[pod.UID] = note
	a.admitted.Remove(pod.UID)
	a.mu.Unlock()
	a.workers.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: pod.UID, Pod: pod, GracePeriod: grace, Reason: strings.ToLower(note.reason)})
}

// PodCleanedUp reports whether none of the pod's containers runs.
func (p evictionPods) PodCleanedUp(uid types.UID) bool {
	st, ok := p.a.pleg.Cache().Get(uid)
	return !ok || len(st.Running()) == 0
}

// stopNote is how the status of a pod the agent stopped (evicted,
// preempted) says so.
type stopNote struct {
	reason, message string
	condition       corev1.PodCondition
}

// evictedStatus returns s failed by the eviction or preemption of pod, if
// it was evicted or preempted.
func (a *Agent) evictedStatus(uid types.UID, s corev1.PodStatus) (corev1.PodStatus, bool) {
	a.mu.Lock()
	n, ok := a.evicted[uid]
	a.mu.Unlock()
	if !ok {
		return s, false
	}
	return status.Fail(s, n.reason, n.message, n.condition, a.d.Clock.Now()), true
}

// reclaimer frees node-level resources for the eviction manager.
type reclaimer struct{ a *Agent }

// ReclaimContainers collects dead containers now, by the GC policy.
func (r reclaimer) ReclaimContainers(ctx context.Context) error {
	return r.a.exec.CollectGarbage(ctx, r.a.livePodStatuses())
}

// ReclaimImages removes the images no container (of any state) uses,
// through the image garbage collector: never a pinned one or the sandbox
// image, none younger than the minimum age.
func (r reclaimer) ReclaimImages(ctx context.Context) error {
	return r.a.images.DeleteUnused(ctx)
}

// livePodStatuses are the runtime views of the pods still syncing (whose
// dead containers the GC policy governs).
func (a *Agent) livePodStatuses() []*podstate.PodStatus {
	var live []*podstate.PodStatus
	for _, uid := range a.workers.UIDs() {
		if _, desired := a.merger.Pod(uid); !desired {
			continue
		}
		if state, _ := a.workers.State(uid); state != podworkers.Syncing {
			continue
		}
		if st, ok := a.pleg.Cache().Get(uid); ok {
			live = append(live, st)
		}
	}
	return live
}
