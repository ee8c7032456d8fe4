//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// cgroupReport prints the container's own memory limit and CFS quota, on
// cgroup v1 (runc mounts the container's cgroup at /sys/fs/cgroup/<ctl>)
// or v2.
const cgroupReport = `echo "MEM $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max)"; ` +
	`echo "QUOTA $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/cpu.max)"`

// TestPodLevelResourcesOnContainerd: a container that sets no resources in
// a pod with pod-level limits runs under the pod's memory limit and CPU
// quota; the pod is Guaranteed by its pod-level resources alone.
func TestPodLevelResourcesOnContainerd(t *testing.T) {
	e := setup(t)
	p := e.pod("podres", false, report(cgroupReport))
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("96Mi")}
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: l, Limits: l}
	got := e.create(t, p)
	running := e.waitPod(t, got, 60*time.Second, "Running and Ready", podReady)
	if running.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("QoS class %s, want Guaranteed", running.Status.QOSClass)
	}
	log := e.logLines(t, got)
	if m := field(log, "MEM "); m != "100663296" {
		t.Errorf("container memory limit %q, want 100663296 (the pod's 96Mi)\n%s", m, log)
	}
	if q := field(log, "QUOTA "); q != "50000" {
		t.Errorf("container CFS quota %q, want 50000 (the pod's 500m)\n%s", q, log)
	}
}

// TestRuntimeClassOverheadOnContainerd: the apiserver copies a
// RuntimeClass's overhead into the pod; lockstep sends it to containerd as
// the sandbox's overhead, apart from the pod's own resources, as upstream
// does (containerd's verbose sandbox status shows the config it got).
func TestRuntimeClassOverheadOnContainerd(t *testing.T) {
	e := setup(t)
	ctx := ctxT(t, 30*time.Second)
	rcName := "e2e-overhead-" + rand.String(5)
	overhead := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("120Mi")}
	if _, err := e.admin.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: rcName}, Handler: "runc",
		Overhead: &nodev1.Overhead{PodFixed: overhead}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.admin.NodeV1().RuntimeClasses().Delete(context.Background(), rcName, metav1.DeleteOptions{})
	})
	p := e.pod("overhead", false, sleeper)
	p.Spec.RuntimeClassName = &rcName
	got := e.create(t, p)
	if got.Spec.Overhead.Memory().Cmp(resource.MustParse("120Mi")) != 0 {
		t.Fatalf("the apiserver set overhead %v, want the class's", got.Spec.Overhead)
	}
	e.waitPod(t, got, 60*time.Second, "Running and Ready", podReady)
	sbs, _ := e.criOf(t, string(got.UID))
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes, want 1", len(sbs))
	}
	st, err := e.cri.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sbs[0].Id, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	info := st.GetInfo()["info"]
	i := strings.Index(info, `"overhead"`)
	if i < 0 {
		t.Fatalf("containerd's sandbox config has no overhead:\n%s", info)
	}
	if !strings.Contains(info[i:], `"memory_limit_in_bytes":125829120`) || !strings.Contains(info[i:], `"cpu_quota":25000`) {
		t.Errorf("sandbox overhead is not 120Mi / 250m:\n%s", info[i:min(len(info), i+400)])
	}
}
