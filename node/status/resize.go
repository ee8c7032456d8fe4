package status

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

func isResizeCondition(t corev1.PodConditionType) bool {
	return t == corev1.PodResizePending || t == corev1.PodResizeInProgress
}

// Resize is what a sync learned about a pod's resize.
type Resize struct {
	// PendingReason (Deferred, Infeasible) and PendingMessage: the resize
	// the spec asks for waits; "" : nothing waits.
	PendingReason, PendingMessage string
	// Allocated: a resize was accepted in this sync (a new
	// PodResizeInProgress, at the pod's generation, replaces any older).
	Allocated bool
	// InProgress: a running container does not yet run with the
	// resources it was allocated.
	InProgress bool
	// Error: carrying the resize out failed with this message.
	Error string
}

// ResizeConditions returns the PodResizePending and PodResizeInProgress
// conditions after a sync, from those of the previous status, as the
// kubelet keeps them: PodResizePending (reason Deferred or Infeasible, the
// admission's message) while a resize waits; PodResizeInProgress from
// the moment a resize is accepted until the runtime reports every running
// container at its allocation, with reason Error and the failure's message
// while carrying it out fails. A condition keeps its observedGeneration
// (the generation whose resize it reports) and transition time while it
// stays; a newly accepted resize starts a new PodResizeInProgress at the
// pod's generation. completed is the observedGeneration of a
// PodResizeInProgress that ended (the ResizeCompleted event's).
func ResizeConditions(prev []corev1.PodCondition, r Resize, generation int64, now time.Time) (out []corev1.PodCondition, completed int64, ended bool) {
	var oldPending, oldProgress *corev1.PodCondition
	for i := range prev {
		switch prev[i].Type {
		case corev1.PodResizePending:
			oldPending = &prev[i]
		case corev1.PodResizeInProgress:
			oldProgress = &prev[i]
		}
	}
	if r.PendingReason != "" {
		c := corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: r.PendingReason,
			Message: r.PendingMessage, ObservedGeneration: generation, LastTransitionTime: metav1.Time{Time: now}}
		c.LastProbeTime = c.LastTransitionTime
		if oldPending != nil && oldPending.Reason == r.PendingReason {
			c.LastTransitionTime = oldPending.LastTransitionTime
			if oldPending.Message == c.Message && oldPending.ObservedGeneration == generation {
				c.LastProbeTime = oldPending.LastProbeTime
			}
		}
		out = append(out, c)
	}
	progress := oldProgress
	if r.Allocated {
		progress = nil
	}
	if !r.Allocated && !r.InProgress && r.Error == "" {
		if progress != nil {
			return out, progress.ObservedGeneration, true
		}
		return out, 0, false
	}
	c := corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, ObservedGeneration: generation,
		LastTransitionTime: metav1.Time{Time: now}, LastProbeTime: metav1.Time{Time: now}}
	if progress != nil {
		c = *progress.DeepCopy()
	}
	if r.Error != "" && (c.Reason != corev1.PodReasonError || c.Message != r.Error) {
		c.Reason, c.Message, c.LastProbeTime = corev1.PodReasonError, r.Error, metav1.Time{Time: now}
	}
	return append(out, c), 0, false
}

// SetResizeConditions replaces s's resize conditions with conds.
func SetResizeConditions(s corev1.PodStatus, conds []corev1.PodCondition) corev1.PodStatus {
	s.Conditions = slices.DeleteFunc(slices.Clone(s.Conditions), func(c corev1.PodCondition) bool { return isResizeCondition(c.Type) })
	s.Conditions = append(s.Conditions, conds...)
	return s
}

// WithResources fills in the resources of s's container statuses, as the
// kubelet reports them: allocatedResources are the requests pod (carrying
// its allocation) gives the container; resources are the allocated ones,
// except that a running instance's cpu and memory settings the runtime
// reports differently from the allocation are reported as they are (cpu
// limit from the CFS quota, cpu request from the shares, memory limit in
// bytes). Containers with no instance in rs get neither.
func WithResources(s corev1.PodStatus, pod *corev1.Pod, rs *podstate.PodStatus) corev1.PodStatus {
	fill := func(specs []corev1.Container, statuses []corev1.ContainerStatus) []corev1.ContainerStatus {
		out := slices.Clone(statuses)
		for i := range out {
			c := specByName(specs, out[i].Name)
			latest, ok := rs.Latest(out[i].Name)
			if c == nil || !ok {
				continue
			}
			out[i].AllocatedResources = c.Resources.Requests.DeepCopy()
			out[i].Resources = actualResources(pod, c, latest)
		}
		return out
	}
	s.InitContainerStatuses = fill(pod.Spec.InitContainers, s.InitContainerStatuses)
	s.ContainerStatuses = fill(pod.Spec.Containers, s.ContainerStatuses)
	return s
}

func specByName(specs []corev1.Container, name string) *corev1.Container {
	for i := range specs {
		if specs[i].Name == name {
			return &specs[i]
		}
	}
	return nil
}

// actualResources is what a container instance runs with (see
// WithResources).
func actualResources(pod *corev1.Pod, c *corev1.Container, latest podstate.Container) *corev1.ResourceRequirements {
	out := c.Resources.DeepCopy()
	have := latest.Resources
	if latest.State != podstate.ContainerRunning || have == nil {
		return out
	}
	want := podspec.ContainerResources(pod, c, podspec.NodeInfo{})
	if out.Limits != nil {
		if have.CPUQuota != want.CpuQuota && have.CPUQuota > 0 && have.CPUPeriod > 0 {
			out.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(have.CPUQuota*1000/have.CPUPeriod, resource.DecimalSI)
		}
		if have.MemoryLimit != want.MemoryLimitInBytes && have.MemoryLimit > 0 {
			out.Limits[corev1.ResourceMemory] = *resource.NewQuantity(have.MemoryLimit, resource.BinarySI)
		}
	}
	if out.Requests != nil && have.CPUShares != want.CpuShares && have.CPUShares > 0 {
		out.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(have.CPUShares*1000/1024, resource.DecimalSI)
	}
	return out
}
