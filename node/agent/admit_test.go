package agent_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// cpuPod is a pod of one long-running container requesting cpu
// millicores, resizable in place.
func cpuPod(name, node string, cpu int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
			Name: "app", Image: "busybox:1.37",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: *resource.NewMilliQuantity(cpu, resource.DecimalSI)}},
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}},
		}}},
	}
}

// outcome is a pod's phase, with the reason and message of a failed one.
func outcome(t *testing.T, h *harness.Harness, name string) string {
	t.Helper()
	p, err := h.API.User().GetPod("default", name)
	if err != nil {
		t.Fatalf("get pod %s: %v", name, err)
	}
	if p.Status.Phase == corev1.PodFailed {
		return string(p.Status.Phase) + " " + p.Status.Reason + ": " + p.Status.Message
	}
	return string(p.Status.Phase)
}

// TestAdmissionCountsResizesAndDepartures: what admission counts as used
// follows the admitted pods' allocations: a pod's accepted resize counts
// at its new size for the next pod, and a deleted pod stops counting.
func TestAdmissionCountsResizesAndDepartures(t *testing.T) {
	h := harness.New(harness.Config{Seed: 5})
	t.Cleanup(h.Close)
	h.StartAgent()
	create := func(p *corev1.Pod) {
		t.Helper()
		if _, err := h.API.User().CreatePod(p); err != nil {
			t.Fatal(err)
		}
	}
	settle := func(what string, cond func() bool) {
		t.Helper()
		if err := h.K.RunUntil(cond, 2*time.Minute); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	phase := func(name string, want corev1.PodPhase) func() bool {
		return func() bool {
			p, err := h.API.User().GetPod("default", name)
			return err == nil && p.Status.Phase == want
		}
	}

	create(cpuPod("a", h.NodeName, 500))
	settle("a Running", phase("a", corev1.PodRunning))
	grown := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(1500, resource.DecimalSI)}}
	if _, err := h.API.User().ResizePod("default", "a", map[string]corev1.ResourceRequirements{"app": grown}); err != nil {
		t.Fatal(err)
	}
	settle("a's resize allocated", func() bool {
		p, err := h.API.User().GetPod("default", "a")
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		got := p.Status.ContainerStatuses[0].AllocatedResources[corev1.ResourceCPU]
		return got.MilliValue() == 1500
	})

	create(cpuPod("b", h.NodeName, 600)) // fitted beside a before its resize
	settle("b Failed", phase("b", corev1.PodFailed))
	want := "Failed OutOfcpu: Pod was rejected: Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000"
	if diff := cmp.Diff(want, outcome(t, h, "b")); diff != "" {
		t.Errorf("b beside a resized (-want +got):\n%s", diff)
	}

	// Deleted with grace, the API object goes once the agent has stopped
	// the pod.
	if err := h.API.User().DeletePodGracefully("default", "a", nil); err != nil {
		t.Fatal(err)
	}
	settle("a gone", func() bool {
		_, err := h.API.User().GetPod("default", "a")
		return err != nil
	})
	create(cpuPod("c", h.NodeName, 1900)) // fits once a is gone
	if err := h.K.RunUntil(phase("c", corev1.PodRunning), 2*time.Minute); err != nil {
		t.Fatalf("c not Running (%s): %v", outcome(t, h, "c"), err)
	}
}
