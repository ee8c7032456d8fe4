//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// resized reports whether p's first container reports want as its
// resources' limit of r, and no resize is pending or in progress.
func resized(r corev1.ResourceName, want string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
				return false
			}
		}
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Running == nil {
			return false
		}
		res := p.Status.ContainerStatuses[0].Resources
		if res == nil {
			return false
		}
		q := res.Limits[r]
		return q.Cmp(resource.MustParse(want)) == 0
	}
}

// containerCgroup is the cgroup of p's first container (relative to the
// hierarchy root) and its runtime ID.
func containerCgroup(p *corev1.Pod) (string, string) {
	id := p.Status.ContainerStatuses[0].ContainerID
	id = id[strings.Index(id, "://")+3:]
	return "/kubepods/burstable/pod" + string(p.UID) + "/" + id, id
}

// TestInPlaceResizeOnContainerd: `kubectl patch --subresource resize` of a
// memory limit (resizePolicy NotRequired) changes the running container's
// cgroup memory limit and the pod cgroup's without a restart, and the
// status reports the new resources with no resize condition left; a cpu
// limit change with resizePolicy RestartContainer restarts the container
// once, under the new CFS quota; a lockstep restart in between changes
// nothing (the allocation is checkpointed).
func TestInPlaceResizeOnContainerd(t *testing.T) {
	e := setup(t)
	k := e.kubectl(t)
	p := e.pod("resize", false, sleeper)
	c := &p.Spec.Containers[0]
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	c.ResizePolicy = []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer},
	}
	p = e.create(t, p)
	p = e.waitPod(t, p, 60*time.Second, "Running and Ready", podReady)
	cg, id := containerCgroup(p)
	podCg := "/kubepods/burstable/pod" + string(p.UID)
	if got := cgroupFile(cg, "memory", "memory.limit_in_bytes", "memory.max"); got != "67108864" {
		t.Fatalf("container cgroup %s memory limit %q before the resize, want 67108864", cg, got)
	}

	start := time.Now()
	out, stderr, err := k.run(t, nil, "", "patch", "pod", p.Name, "-n", p.Namespace, "--subresource", "resize",
		"-p", `{"spec":{"containers":[{"name":"c","resources":{"limits":{"memory":"96Mi"}}}]}}`)
	if err != nil {
		t.Fatalf("kubectl patch --subresource resize: %v\n%s%s", err, out, stderr)
	}
	p = e.waitPod(t, p, 60*time.Second, "resized to a 96Mi memory limit", resized(corev1.ResourceMemory, "96Mi"))
	t.Logf("FIGURE memory resize applied and reported in %v", time.Since(start).Round(time.Millisecond))
	cs := p.Status.ContainerStatuses[0]
	if cs.RestartCount != 0 || !strings.HasSuffix(cs.ContainerID, id) {
		t.Errorf("after a NotRequired memory resize: restartCount %d, container %s; want 0 and the same container %s", cs.RestartCount, cs.ContainerID, id)
	}
	if got := cgroupFile(cg, "memory", "memory.limit_in_bytes", "memory.max"); got != "100663296" {
		t.Errorf("container cgroup %s memory limit %q after the resize, want 100663296", cg, got)
	}
	if got := cgroupFile(podCg, "memory", "memory.limit_in_bytes", "memory.max"); got != "100663296" {
		t.Errorf("pod cgroup %s memory limit %q after the resize, want 100663296", podCg, got)
	}
	if q := cs.AllocatedResources[corev1.ResourceMemory]; q.Cmp(resource.MustParse("32Mi")) != 0 {
		t.Errorf("allocatedResources %v, want memory 32Mi (the request)", cs.AllocatedResources)
	}

	// A restarted lockstep keeps the allocation (its checkpoint): nothing
	// is resized or restarted again.
	e.restartLockstep(t)
	// The new agent has synced the pod and relisted twice since its last
	// step: a resize or restart would have shown.
	e.waitPodsSettled(t, 60*time.Second, p)
	p = e.waitPod(t, p, 60*time.Second, "still resized after a lockstep restart", resized(corev1.ResourceMemory, "96Mi"))
	if cs := p.Status.ContainerStatuses[0]; cs.RestartCount != 0 || !strings.HasSuffix(cs.ContainerID, id) {
		t.Errorf("after a lockstep restart: restartCount %d, container %s; want 0 and %s", cs.RestartCount, cs.ContainerID, id)
	}
	if got := cgroupFile(cg, "memory", "memory.limit_in_bytes", "memory.max"); got != "100663296" {
		t.Errorf("container cgroup %s memory limit %q after a lockstep restart, want 100663296", cg, got)
	}

	patch := `{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"300m"}}}]}}`
	if _, err := e.admin.CoreV1().Pods(p.Namespace).Patch(context.Background(), p.Name, types.StrategicMergePatchType,
		[]byte(patch), metav1.PatchOptions{}, "resize"); err != nil {
		t.Fatalf("patch pods/resize (cpu): %v", err)
	}
	p = e.waitPod(t, p, 90*time.Second, "restarted with a 300m cpu limit", func(p *corev1.Pod) bool {
		return resized(corev1.ResourceCPU, "300m")(p) && p.Status.ContainerStatuses[0].RestartCount == 1
	})
	cg, _ = containerCgroup(p)
	if got := cgroupFile(cg, "cpu", "cpu.cfs_quota_us", "cpu.max"); got != "30000" && got != "30000 100000" {
		t.Errorf("container cgroup %s CFS quota %q after the cpu resize, want 30000", cg, got)
	}
	e.waitPodsSettled(t, 30*time.Second, p)
	if got := e.get(t, p).Status.ContainerStatuses[0].RestartCount; got != 1 {
		t.Errorf("restartCount %d a while after the RestartContainer resize, want exactly 1", got)
	}

	// Beyond the node's allocatable: the apiserver refuses it (NodeCapacity).
	_, err = e.admin.CoreV1().Pods(p.Namespace).Patch(context.Background(), p.Name, types.StrategicMergePatchType,
		[]byte(fmt.Sprintf(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"%d"},"limits":{"cpu":"%d"}}}]}}`, 4096, 4096)),
		metav1.PatchOptions{}, "resize")
	if err == nil || !strings.Contains(err.Error(), "enough allocatable") {
		t.Errorf("resize beyond the node's allocatable: err %v, want the apiserver's NodeCapacity refusal", err)
	}
}
