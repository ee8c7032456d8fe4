//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// cgroupFile reads a file of a cgroup (relative to the hierarchy root, as
// /kubepods/burstable/pod<uid>) on cgroup v1 (v1 is the controller's
// hierarchy, v2 the unified file's name); "" when missing.
func cgroupFile(cg, v1Ctl, v1File, v2File string) string {
	p := filepath.Join("/sys/fs/cgroup", v1Ctl, cg, v1File)
	if unified() {
		p = filepath.Join("/sys/fs/cgroup", cg, v2File)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func unified() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
}

// cgroupExists reports whether the cgroup exists in the cpu (v1) or the
// unified hierarchy.
func cgroupExists(cg string) bool {
	p := filepath.Join("/sys/fs/cgroup/cpu", cg)
	if unified() {
		p = filepath.Join("/sys/fs/cgroup", cg)
	}
	_, err := os.Stat(p)
	return err == nil
}

// TestPodCgroupsOnContainerd: a Guaranteed pod's cgroup is kubepods/pod<uid>
// and a Burstable pod's kubepods/burstable/pod<uid>, each with the CFS
// quota and memory limit of the pod's limits and its containers inside;
// both are gone once the pods are deleted.
func TestPodCgroupsOnContainerd(t *testing.T) {
	e := setup(t)
	g := e.pod("cg-guaranteed", false, sleeper)
	gl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	g.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: gl, Limits: gl}
	b := e.pod("cg-burstable", false, sleeper)
	b.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	g, b = e.create(t, g), e.create(t, b)
	g = e.waitPod(t, g, 60*time.Second, "Running and Ready", podReady)
	b = e.waitPod(t, b, 60*time.Second, "Running and Ready", podReady)
	if g.Status.QOSClass != corev1.PodQOSGuaranteed || b.Status.QOSClass != corev1.PodQOSBurstable {
		t.Fatalf("QoS classes %s, %s; want Guaranteed, Burstable", g.Status.QOSClass, b.Status.QOSClass)
	}
	for _, tc := range []struct {
		pod                *corev1.Pod
		cg                 string
		quota, mem, shares string
		v2quota, v2memory  string
	}{
		{g, "/kubepods/pod" + string(g.UID), "25000", "67108864", "256", "25000 100000", "67108864"},
		{b, "/kubepods/burstable/pod" + string(b.UID), "50000", "134217728", "102", "50000 100000", "134217728"},
	} {
		if !cgroupExists(tc.cg) {
			t.Errorf("pod %s: no cgroup %s", tc.pod.Name, tc.cg)
			continue
		}
		quota := cgroupFile(tc.cg, "cpu", "cpu.cfs_quota_us", "cpu.max")
		mem := cgroupFile(tc.cg, "memory", "memory.limit_in_bytes", "memory.max")
		wantQuota, wantMem := tc.quota, tc.mem
		if unified() {
			wantQuota, wantMem = tc.v2quota, tc.v2memory
		}
		if quota != wantQuota || mem != wantMem {
			t.Errorf("pod %s cgroup %s: CFS quota %q, memory limit %q; want %q, %q", tc.pod.Name, tc.cg, quota, mem, wantQuota, wantMem)
		}
		if !unified() {
			if s := cgroupFile(tc.cg, "cpu", "cpu.shares", ""); s != tc.shares {
				t.Errorf("pod %s cgroup %s: cpu.shares %q, want %q", tc.pod.Name, tc.cg, s, tc.shares)
			}
		}
		_, cs := e.criOf(t, string(tc.pod.UID))
		for _, c := range cs {
			if !cgroupExists(tc.cg + "/" + c.Id) {
				t.Errorf("pod %s: container %s is not in a cgroup under %s", tc.pod.Name, c.Metadata.GetName(), tc.cg)
			}
		}
	}
	if s := cgroupFile("/kubepods/besteffort", "cpu", "cpu.shares", "cpu.weight"); s != "2" && s != "1" {
		t.Errorf("besteffort cpu shares/weight %q, want 2 (v1) or 1 (v2)", s)
	}
	for _, p := range []*corev1.Pod{g, b} {
		e.deleteAndWait(t, p, 60*time.Second)
	}
	for _, cg := range []string{"/kubepods/pod" + string(g.UID), "/kubepods/burstable/pod" + string(b.UID)} {
		poll(t, 30*time.Second, "cgroup "+cg+" removed", func() (bool, error) {
			return !cgroupExists(cg), fmt.Errorf("%s still exists", cg)
		})
	}
}
