package scenarios

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// volumeStatusBound is how long after a pod whose volume source is
// missing reached the API its status must show it waiting: the kubelet's
// sync writes the status before it waits for the volumes (SyncPod, then
// WaitForAttachAndMount), so the first sync writes it; the pod's
// admission, the sync and the status write take no virtual time unless a
// fault slows them (then the invariant is excused). The node suite's
// termination spec gives it 20 s.
const volumeStatusBound = 10 * time.Second

// volStatusChecks is volume-wait-status's state: the pods seen with a
// configMap or secret volume (not optional) whose object did not exist
// from the first time the checker saw the pod, by UID, and when.
type volStatusChecks struct {
	since    map[types.UID]time.Duration
	pods     map[types.UID]*corev1.Pod
	resolved map[types.UID]bool
	reported map[types.UID]bool
	// faultAt: when an agent fault point last fired (-1: never).
	faultAt time.Duration
}

// volStatus is c's volume-wait-status state, made on first use.
func (c *Checker) volStatus() *volStatusChecks {
	if c.vs == nil {
		c.vs = &volStatusChecks{since: map[types.UID]time.Duration{}, pods: map[types.UID]*corev1.Pod{},
			resolved: map[types.UID]bool{}, reported: map[types.UID]bool{}, faultAt: -1}
	}
	return c.vs
}

// missingVolumeSource reports whether pod has a configMap or secret
// volume, not optional, whose object does not exist in the API (as the
// user sees it, with no fault).
func (c *Checker) missingVolumeSource(pod *corev1.Pod) bool {
	u := c.h.API.User()
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil && (v.ConfigMap.Optional == nil || !*v.ConfigMap.Optional):
			if !u.HasConfigMap(pod.Namespace, v.ConfigMap.Name) {
				return true
			}
		case v.Secret != nil && (v.Secret.Optional == nil || !*v.Secret.Optional):
			if !u.HasSecret(pod.Namespace, v.Secret.SecretName) {
				return true
			}
		}
	}
	return false
}

// onWriteVolStatus follows pod writes: a pod first seen (bound to the
// node) with a missing volume source is followed; a pod deleted is
// forgotten; and a status showing a followed pod Running while its
// source is still missing breaks volume-wait-status.
func (c *Checker) onWriteVolStatus(r apiserver.Record) {
	vs, p := c.volStatus(), r.Pod
	if r.Verb == apiserver.VerbDelete {
		delete(vs.since, p.UID)
		delete(vs.pods, p.UID)
		return
	}
	if p.Spec.NodeName != c.h.NodeName || vs.resolved[p.UID] {
		return
	}
	if _, ok := vs.since[p.UID]; !ok {
		if !c.missingVolumeSource(p) {
			vs.resolved[p.UID] = true
			return
		}
		vs.since[p.UID] = c.h.K.Elapsed()
	}
	vs.pods[p.UID] = p
	if p.Status.Phase == corev1.PodRunning && c.missingVolumeSource(p) && !vs.reported[p.UID] {
		vs.reported[p.UID] = true
		c.fail("volume-wait-status", "pod %s/%s shown Running while a volume source it mounts does not exist", p.Namespace, p.Name)
	}
}

// checkVolStatus is volume-wait-status's bound (every step): a followed
// pod whose volume source is still missing volumeStatusBound after it was
// first seen, not being deleted, shows in its API status what the
// kubelet writes while its sync waits for the volumes, with no sandbox:
// phase Pending, PodScheduled True, PodReadyToStartContainers,
// ContainersReady and Ready False, and a waiting state for each
// container. Excused while the world is not quiet since it was first seen
// (the agent down or restarted, a runtime or API fault, the pod source
// failing, an agent fault point firing): the write may wait.
func (c *Checker) checkVolStatus() {
	vs := c.vs
	if vs == nil || len(vs.since) == 0 {
		return
	}
	now := c.h.K.Elapsed()
	// In UID order: the first failure reported, and so the trace, must
	// not depend on the map's order.
	for _, uid := range slices.Sorted(maps.Keys(vs.since)) {
		since := vs.since[uid]
		p := vs.pods[uid]
		switch {
		case vs.reported[uid] || p == nil || p.DeletionTimestamp != nil || now-since <= volumeStatusBound:
			continue
		case !c.missingVolumeSource(p):
			vs.resolved[uid] = true
			delete(vs.since, uid)
			continue
		case c.suite.sourceFailing || c.impairedWithin(now-since) || vs.faultAt >= since:
			continue
		}
		if why := volumeWaitShown(p); why != "" {
			vs.reported[uid] = true
			c.fail("volume-wait-status", "pod %s/%s, a volume source missing, first seen %v ago: its API status %s", p.Namespace, p.Name, now-since, why)
		}
	}
}

// volumeWaitShown says what p's status lacks of a pod waiting for its
// volumes with no sandbox ("" when nothing).
func volumeWaitShown(p *corev1.Pod) string {
	// A list, not a map: the first condition reported must not depend on
	// the map's order (the failure's text is in the trace).
	want := []struct {
		t corev1.PodConditionType
		s corev1.ConditionStatus
	}{
		{corev1.PodScheduled, corev1.ConditionTrue}, {corev1.PodReadyToStartContainers, corev1.ConditionFalse},
		{corev1.ContainersReady, corev1.ConditionFalse}, {corev1.PodReady, corev1.ConditionFalse},
	}
	if p.Status.Phase != corev1.PodPending {
		return "has phase " + string(p.Status.Phase) + ", want Pending"
	}
	got := map[corev1.PodConditionType]corev1.ConditionStatus{}
	for _, cd := range p.Status.Conditions {
		got[cd.Type] = cd.Status
	}
	for _, w := range want {
		if got[w.t] != w.s {
			return "has condition " + string(w.t) + "=" + string(got[w.t]) + ", want " + string(w.s)
		}
	}
	if n := len(p.Status.ContainerStatuses); n != len(p.Spec.Containers) {
		return "lists no status for some containers"
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting == nil {
			return "shows container " + cs.Name + " not waiting"
		}
	}
	return ""
}
