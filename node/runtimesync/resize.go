package runtimesync

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

// ResizeUpdate is the in-place resize of a running container instance:
// the resources it gets through CRI UpdateContainerResources.
type ResizeUpdate struct {
	ID, Name  string
	Resources *runtimeapi.LinuxContainerResources
	// Current is what the runtime reports the instance runs with.
	Current podstate.Resources
}

// shrinks reports whether u lowers a limit or the cpu weight (the kubelet
// applies decreases before increases).
func (u ResizeUpdate) shrinks() bool {
	return u.Resources.MemoryLimitInBytes < u.Current.MemoryLimit && u.Resources.MemoryLimitInBytes > 0 ||
		u.Current.MemoryLimit == 0 && u.Resources.MemoryLimitInBytes > 0 ||
		u.Resources.CpuShares < u.Current.CPUShares ||
		u.Resources.CpuQuota < u.Current.CPUQuota && u.Resources.CpuQuota > 0
}

// resizeChange compares a running instance's reported resources with
// those pod (carrying its allocation) gives container c, and reports
// whether its memory or cpu settings differ and whether a differing
// resource's resizePolicy is RestartContainer. An instance whose runtime
// reports no resources is taken as sized right.
func resizeChange(pod *corev1.Pod, c *corev1.Container, latest podstate.Container, node podspec.NodeInfo) (changed, restart bool, want *runtimeapi.LinuxContainerResources) {
	if latest.State != podstate.ContainerRunning || latest.Resources == nil {
		return false, false, nil
	}
	want = podspec.ContainerResources(pod, c, node)
	have := latest.Resources
	memory := want.MemoryLimitInBytes != have.MemoryLimit
	cpu := want.CpuShares != have.CPUShares || want.CpuQuota != have.CPUQuota
	if !memory && !cpu {
		return false, false, want
	}
	return true, memory && restartsOn(c, corev1.ResourceMemory) || cpu && restartsOn(c, corev1.ResourceCPU), want
}

// restartsOn reports whether c's resizePolicy for r is RestartContainer
// (the default is NotRequired).
func restartsOn(c *corev1.Container, r corev1.ResourceName) bool {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == r {
			return p.RestartPolicy == corev1.RestartContainer
		}
	}
	return false
}

// resizeRestart is the kill of a running instance whose resize asks for
// a restart (the start follows in the same sync).
func resizeRestart(in Inputs, c *corev1.Container, latest podstate.Container) (ContainerKill, bool) {
	if !in.Resizing {
		return ContainerKill{}, false
	}
	if _, restart, _ := resizeChange(in.Pod, c, latest, in.Node); !restart {
		return ContainerKill{}, false
	}
	return ContainerKill{ID: latest.ID, Name: c.Name, Reason: "resize requires restart",
		Message: fmt.Sprintf("Container %s resize requires restart", c.Name)}, true
}

// PlanResize lists the in-place updates that bring pod's running
// containers to the resources pod (carrying its allocation) gives them:
// those whose resources differ and whose resizePolicy needs no restart,
// decreases first.
func PlanResize(pod *corev1.Pod, st *podstate.PodStatus, node podspec.NodeInfo) []ResizeUpdate {
	var out []ResizeUpdate
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			latest, ok := st.Latest(c.Name)
			if !ok {
				continue
			}
			changed, restart, want := resizeChange(pod, c, latest, node)
			if !changed || restart {
				continue
			}
			out = append(out, ResizeUpdate{ID: latest.ID, Name: c.Name, Resources: want, Current: *latest.Resources})
		}
	}
	slices.SortStableFunc(out, func(a, b ResizeUpdate) int {
		switch {
		case a.shrinks() && !b.shrinks():
			return -1
		case b.shrinks() && !a.shrinks():
			return 1
		}
		return 0
	})
	return out
}

// ResizeInProgress reports whether a running container of pod (carrying
// its allocation) does not yet run with the resources it was allocated,
// as the runtime reports them.
func ResizeInProgress(pod *corev1.Pod, st *podstate.PodStatus, node podspec.NodeInfo) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if latest, ok := st.Latest(list[i].Name); ok {
				if changed, _, _ := resizeChange(pod, &list[i], latest, node); changed {
					return true
				}
			}
		}
	}
	return false
}

// PlanResize is the executor's PlanResize, with its node facts.
func (e *Executor) PlanResize(pod *corev1.Pod, st *podstate.PodStatus) []ResizeUpdate {
	return PlanResize(pod, st, e.cfg.Node)
}

// ResizeInProgress is ResizeInProgress with the executor's node facts.
func (e *Executor) ResizeInProgress(pod *corev1.Pod, st *podstate.PodStatus) bool {
	return ResizeInProgress(pod, st, e.cfg.Node)
}

// Resize carries updates out through CRI UpdateContainerResources, in
// order, stopping at the first failure (the next sync retries what is
// left). As the kubelet, it refuses beforehand to lower a memory limit
// below what a container uses now: "cannot decrease memory limits: …".
func (e *Executor) Resize(ctx context.Context, pod *corev1.Pod, updates []ResizeUpdate) error {
	if err := e.checkMemoryDecrease(ctx, updates); err != nil {
		return err
	}
	for _, u := range updates {
		if err := e.ports.Runtime.UpdateContainerResources(ctx, u.ID, &runtimeapi.ContainerResources{Linux: u.Resources}); err != nil {
			return fmt.Errorf("update the resources of container %q of pod %s/%s: %w", u.Name, pod.Namespace, pod.Name, err)
		}
		e.d.Log.Info("container resized in place", "pod", pod.Namespace+"/"+pod.Name, "container", u.Name,
			"memoryLimit", u.Resources.MemoryLimitInBytes, "cpuQuota", u.Resources.CpuQuota, "cpuShares", u.Resources.CpuShares)
	}
	return nil
}

// checkMemoryDecrease refuses memory limits set below the containers'
// current usage (CRI ContainerStats), as the kubelet's resize validation.
func (e *Executor) checkMemoryDecrease(ctx context.Context, updates []ResizeUpdate) error {
	var errs []error
	for _, u := range updates {
		limit := u.Resources.MemoryLimitInBytes
		if limit <= 0 || (u.Current.MemoryLimit > 0 && limit >= u.Current.MemoryLimit) {
			continue
		}
		st, err := e.ports.Runtime.ContainerStats(ctx, u.ID)
		if err != nil || st.GetMemory().GetUsageBytes() == nil {
			errs = append(errs, fmt.Errorf("missing container %q memory usage", u.Name))
			continue
		}
		if usage := st.GetMemory().GetUsageBytes().GetValue(); usage >= uint64(limit) {
			errs = append(errs, fmt.Errorf("attempting to set container %q memory limit (%d) below current usage (%d)", u.Name, limit, usage))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot decrease memory limits: %w", errors.Join(errs...))
	}
	return nil
}
