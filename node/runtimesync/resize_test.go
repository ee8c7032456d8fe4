package runtimesync

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

// resizablePod is a pod whose containers a and b have memory limit memMi
// and cpu limit cpuMilli (requests half), with b's cpu resizePolicy
// RestartContainer.
func resizablePod(memMi, cpuMilli int64) *corev1.Pod {
	p := testPod(corev1.RestartPolicyAlways, nil, "a", "b")
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpuMilli/2, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(memMi<<19, resource.BinarySI)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(memMi<<20, resource.BinarySI)},
		}
	}
	p.Spec.Containers[1].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
	return p
}

// runningWith is a running instance reporting the resources pod gives
// container name.
func runningWith(id, name string, pod *corev1.Pod) podstate.Container {
	c := ctr(id, name, podstate.ContainerRunning, 0, 0, 0)
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			c.Resources = podstate.ResourcesFromCRI(podspec.ContainerResources(pod, &pod.Spec.Containers[i], podspec.NodeInfo{}))
		}
	}
	return c
}

// TestResizeActions: a memory change is made in place for both
// containers (the decrease first); a cpu change restarts b (its policy)
// and is made in place for a, but only once a resize of the pod was
// accepted; an instance whose runtime reports no resources is left alone.
func TestResizeActions(t *testing.T) {
	old := resizablePod(128, 1000)
	sb := []podstate.Sandbox{ready("sb1", 0)}
	st := podStatus(sb, runningWith("ia", "a", old), runningWith("ib", "b", old))

	memDown := resizablePod(64, 1000)
	memDown.Spec.Containers[1].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi") // b grows
	plan := PlanResize(memDown, st, podspec.NodeInfo{})
	if d := cmp.Diff([]string{"a", "b"}, names(plan)); d != "" {
		t.Errorf("in-place updates of a memory resize (-want +got):\n%s", d)
	}
	if len(plan) == 2 && plan[0].Resources.MemoryLimitInBytes != 64<<20 {
		t.Errorf("first update's memory limit %d, want the decrease (64 MiB) first", plan[0].Resources.MemoryLimitInBytes)
	}
	acts := ComputeActions(Inputs{Pod: memDown, Status: st, Now: now, Hash: hash, Resizing: true})
	if len(acts.Kill) != 0 || len(acts.Start) != 0 {
		t.Errorf("a NotRequired memory resize kills %v and starts %v, want nothing", acts.Kill, acts.Start)
	}

	cpuUp := resizablePod(128, 2000)
	if d := cmp.Diff([]string{"a"}, names(PlanResize(cpuUp, st, podspec.NodeInfo{}))); d != "" {
		t.Errorf("in-place updates of a cpu resize (-want +got):\n%s", d)
	}
	if acts := ComputeActions(Inputs{Pod: cpuUp, Status: st, Now: now, Hash: hash}); len(acts.Kill) != 0 {
		t.Errorf("a pod never resized kills %v, want nothing (it runs as created)", acts.Kill)
	}
	acts = ComputeActions(Inputs{Pod: cpuUp, Status: st, Now: now, Hash: hash, Resizing: true})
	wantKill := []ContainerKill{{ID: "ib", Name: "b", Reason: "resize requires restart", Message: "Container b resize requires restart"}}
	if d := cmp.Diff(wantKill, acts.Kill); d != "" {
		t.Errorf("kills of a RestartContainer cpu resize (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]ContainerStart{{Name: "b", Index: 1, RestartCount: 1}}, acts.Start); d != "" {
		t.Errorf("starts of a RestartContainer cpu resize (-want +got):\n%s", d)
	}
	if !ResizeInProgress(cpuUp, st, podspec.NodeInfo{}) || ResizeInProgress(old, st, podspec.NodeInfo{}) {
		t.Errorf("ResizeInProgress: want true for the resized pod, false for the one its containers run as")
	}

	unknown := podStatus(sb, ctr("ia", "a", podstate.ContainerRunning, 0, 0, 0), ctr("ib", "b", podstate.ContainerRunning, 0, 0, 0))
	if plan := PlanResize(cpuUp, unknown, podspec.NodeInfo{}); len(plan) != 0 {
		t.Errorf("updates for instances without reported resources: %v, want none", names(plan))
	}
}

func names(us []ResizeUpdate) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Name)
	}
	return out
}
