package agent

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/activepods"
	"github.com/lockstep-dev/lockstep/node/admission"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/eviction"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/node/podadmit"
	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podworkers"
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

// admissionNode is the node as admission sees it (podadmit.AdmissionNode):
// the Node from its watch (or, unwatched, read from the API at most a
// moment ago) for labels and taints, else the one the node status last
// wrote, else the labels the node registers with.
func (a *Agent) admissionNode() admission.Node {
	maxPods := a.cfg.NodeStatus.MaxPods
	if maxPods <= 0 {
		maxPods = nodestatus.DefaultMaxPods
	}
	facts := podadmit.NodeFacts{Name: a.cfg.NodeName, Allocatable: a.cfg.Node.Allocatable, MaxPods: maxPods}
	if a.cm.devices != nil {
		facts.Devices = a.cm.devices.AdmissionAllocatable()
	}
	written := func() *corev1.Node {
		if a.node.status == nil {
			return nil
		}
		return a.node.status.Node()
	}
	return podadmit.AdmissionNode(facts, a.registeredLabels, a.admission.node.Current, written)
}

// registeredLabels are the labels the node registers with.
func (a *Agent) registeredLabels() map[string]string {
	var info deps.MachineInfo
	if a.d.Machine != nil {
		info, _ = a.d.Machine.Info(context.Background())
	}
	nc := a.cfg.NodeStatus
	nc.NodeName = a.cfg.NodeName
	return nodestatus.Labels(nc, info)
}

// admit decides whether a pod new to the agent may run
// (podadmit.Decide) and records the decision. A refused pod is
// remembered: its sync fails it (Failed, the reason and message) and
// starts nothing. Pods already terminal or being deleted are not admitted
// (they will not run) and count for nothing.
func (a *Agent) admit(pod *corev1.Pod) {
	if !a.admission.book.NeedsDecision(pod) {
		return
	}
	// Admitted with the resources it was allocated before (a restarted
	// agent): a resize it had deferred is not accepted by the way.
	pod = a.cm.alloc.Allocated(pod)
	steps := podadmit.Steps{
		Pressure: a.node.evictions.Conditions(), ShuttingDown: a.node.shutdown.ShuttingDown(), AppArmor: a.admission.appArmor,
		Declared: nodestatus.DeclaredFeatures(),
		Node:     a.admissionNode, FreshNode: a.admission.node.Read, Fits: a.admission.book.Fits, Admitted: a.admittedPods,
		Preempt: a.preempt, Resources: a.admitResources,
	}
	if a.cm.devices != nil {
		steps.Devices = func(pod *corev1.Pod) admission.Decision {
			if reason, msg, ok := a.cm.devices.Admit(pod, a.holdingResources); !ok {
				return admission.Decision{Reason: reason, Message: msg}
			}
			return admission.Decision{}
		}
	}
	d := podadmit.Decide(pod, steps)
	if !d.Admitted() {
		a.d.Log.Info("pod refused admission", "pod", pod.Namespace+"/"+pod.Name, "uid", string(pod.UID), "reason", d.Reason, "message", d.Message)
	}
	a.admission.book.Record(pod, d)
	if d.Admitted() {
		a.recordAllocation(pod)
	}
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
		a.stopAndFail(v, nil, podadmit.StopNote{Reason: admission.ReasonPreempting, Message: admission.PreemptedMessage, Condition: cond})
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

// forgetAdmission drops a pod that stopped counting against the node (it
// is terminating).
func (a *Agent) forgetAdmission(uid types.UID) {
	if a.admission.book.Release(uid) {
		// Its resources are free again: deferred resizes may fit now.
		a.wakePendingResizes(uid)
	}
}

// evictionPods is the agent's side of the eviction manager.
type evictionPods struct{ a *Agent }

// ActivePods are the pods the eviction manager may evict
// (activepods.Evictable).
func (p evictionPods) ActivePods() []*corev1.Pod { return activepods.Evictable(p.a.podSets()) }

// Evict stops the pod with grace and fails it with the eviction's
// message and condition (see SyncTerminatingPod).
func (p evictionPods) Evict(pod *corev1.Pod, grace int64, message string, cond corev1.PodCondition) {
	p.a.stopAndFail(pod, &grace, podadmit.StopNote{Reason: eviction.Reason, Message: message, Condition: cond})
}

// stopAndFail stops an admitted pod (with grace, nil: its own) and fails
// it as note says (see SyncTerminatingPod).
func (a *Agent) stopAndFail(pod *corev1.Pod, grace *int64, note podadmit.StopNote) {
	a.admission.book.Stop(pod.UID, note)
	a.workers.UpdatePod(podworkers.Work{Type: podworkers.Kill, UID: pod.UID, Pod: pod, GracePeriod: grace, Reason: strings.ToLower(note.Reason)})
}

// PodCleanedUp reports whether none of the pod's containers runs.
func (p evictionPods) PodCleanedUp(uid types.UID) bool {
	st, ok := p.a.pleg.Cache().Get(uid)
	return !ok || len(st.Running()) == 0
}

// evictedStatus returns s failed by the eviction or preemption of pod, if
// it was evicted or preempted.
func (a *Agent) evictedStatus(uid types.UID, s corev1.PodStatus) (corev1.PodStatus, bool) {
	n, ok := a.admission.book.Stopped(uid)
	if !ok {
		return s, false
	}
	return status.Fail(s, n.Reason, n.Message, n.Condition, a.d.Clock.Now()), true
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
	return r.a.node.images.DeleteUnused(ctx)
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
