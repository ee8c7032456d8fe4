package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/activepods"
	"github.com/lockstep-dev/lockstep/node/cm/cgroups"
	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/nodestatus"
	"github.com/lockstep-dev/lockstep/node/podspec"
)

// ReasonFailedToCreatePodContainer is upstream's event reason when a pod's
// cgroup cannot be made.
const ReasonFailedToCreatePodContainer = "FailedToCreatePodContainer"

// newCgroups builds the pod and QoS cgroup manager from the machine's
// capacity and allocatable (read as the node status reads them). Once it
// has set kubepods up, the node gets the kubelet's NodeAllocatableEnforced
// event.
func newCgroups(d deps.Deps, cfg Config) *cgroups.Manager {
	if d.Cgroups == nil || !cfg.Cgroups.CgroupsPerQOS {
		return cgroups.New(d.Core, nil, cfg.Cgroups, cgroups.Node{})
	}
	node := cgroups.Node{Allocatable: cfg.Node.Allocatable, HugePageSizes: cfg.Node.HugePageSizes}
	if d.Machine != nil {
		nc := cfg.NodeStatus
		nc.NodeName = cfg.NodeName
		// Built before any task runs; both machines answer at once.
		if capacity, allocatable, err := nodestatus.ReadResources(context.Background(), d.Machine, nc); err == nil {
			node.Capacity, node.Allocatable = capacity, allocatable
		}
	}
	m := cgroups.New(d.Core, d.Cgroups, cfg.Cgroups, node)
	if events := d.API.Events; events != nil {
		ref := &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: cfg.NodeName, UID: types.UID(cfg.NodeName)}
		m.OnStarted(func() {
			events.Event(ref, corev1.EventTypeNormal, cgroups.ReasonNodeAllocatableEnforced, cgroups.MessageNodeAllocatableEnforced)
		})
	}
	return m
}

// startCgroups sets up kubepods and the QoS cgroups; a failure is logged
// and the first pod sync tries again.
func (a *Agent) startCgroups() {
	if err := a.cm.cgroups.Start(); err != nil {
		a.d.Log.Warn("setting up the kubepods cgroups failed; pods will retry", "error", err.Error())
	}
}

// ensurePodCgroup makes the pod's cgroup (and the QoS cgroups' limits)
// before its sandbox is created; a failure is a Warning event
// FailedToCreatePodContainer and a failed sync, retried.
func (a *Agent) ensurePodCgroup(pod *corev1.Pod) error {
	if err := a.cm.cgroups.Start(); err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	err := a.cm.cgroups.EnsurePod(pod, podspec.QOSClass(pod), a.holdingResources)
	if err == nil {
		return nil
	}
	if a.d.API.Events != nil {
		ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
		a.d.API.Events.Event(ref, corev1.EventTypeWarning, ReasonFailedToCreatePodContainer, "unable to ensure pod container exists: "+err.Error())
	}
	return fmt.Errorf("ensure the cgroup of pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

// holdingResources are the pods whose requests count in the QoS cgroups
// and which may hold CPUs, memory and devices (activepods.HoldingResources).
func (a *Agent) holdingResources() []*corev1.Pod { return activepods.HoldingResources(a.podSets()) }

// podSets are the facts the active pod sets are computed from.
func (a *Agent) podSets() activepods.Sources {
	return activepods.Sources{
		Desired: a.merger, Workers: a.workers, Admitted: a.admission.book.Admitted, Refused: a.refused, Allocated: a.cm.alloc.Allocated,
		Phase: func(uid types.UID) (corev1.PodPhase, bool) {
			s, ok := a.status.PodStatus(uid)
			return s.Phase, ok
		},
		Runtime: a.pleg.Cache().Get,
	}
}

// removePodCgroup removes a terminated pod's cgroup and gives its share
// back to the QoS cgroups; a failure is left to housekeeping.
func (a *Agent) removePodCgroup(uid types.UID) {
	if err := a.cm.cgroups.RemovePod(uid); err != nil {
		a.d.Log.Warn("removing a terminated pod's cgroup failed; housekeeping will retry", "uid", string(uid), "error", err.Error())
	}
	if !a.cm.cgroups.Enabled() {
		// No QoS cgroups to resize (--cgroups-per-qos=false): do not list
		// every active pod for nothing at each pod's end (a burst of N
		// terminations listed N pods N times: 56 % of lockstep's CPU
		// deleting 2,000 pods in make bench-compare).
		return
	}
	if err := a.cm.cgroups.UpdateQOS(a.holdingResources()); err != nil {
		a.d.Log.Warn("updating the QoS cgroups failed", "error", err.Error())
	}
}

// cgroupHousekeeping updates the QoS cgroups and removes the cgroups of
// pods that can no longer run: no source wants them or their worker has
// finished, and nothing of theirs runs in the runtime.
func (a *Agent) cgroupHousekeeping() {
	if !a.cm.cgroups.Enabled() {
		return
	}
	if err := a.cm.cgroups.UpdateQOS(a.holdingResources()); err != nil {
		a.d.Log.Warn("updating the QoS cgroups failed", "error", err.Error())
	}
	removed, err := a.cm.cgroups.RemoveOrphans(a.mayRunPod)
	for _, uid := range removed {
		a.d.Log.Info("orphaned pod cgroup removed", "uid", string(uid))
	}
	if err != nil {
		a.d.Log.Warn("removing orphaned pod cgroups failed; will retry", "error", err.Error())
	}
}

// mayRunPod reports whether the pod may still have processes or start
// some (activepods.MayRun): its cgroup, devices and allocation stay.
func (a *Agent) mayRunPod(uid types.UID) bool { return activepods.MayRun(a.podSets(), uid) }
