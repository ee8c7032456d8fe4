package scenarios

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// withScratch gives the pod an emptyDir "scratch" mounted in app.
func withScratch(p *corev1.Pod) {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: "/scratch"})
}

// TestStatsOnARuntimeLikeContainerd16: the whole agent against a runtime
// that has no sandbox stats and no CPU rate (containerd 1.6 on these
// hosts). Its own sampling loop (no eviction thresholds) still gives the
// Summary of a running pod: the containers' CPU rate from two samples (the
// scripted 300m and 50m), the pod's as their sum, the working sets, the
// container's log files (it logs a line a second) and its emptyDir as the
// agent measures them.
func TestStatsOnARuntimeLikeContainerd16(t *testing.T) {
	h, c, pod := runningStatsPod(t, harness.Config{Seed: 14}, NewPod("busy", "", withScratch,
		Env("app", "FAKECRI_CPU", "300m"), Env("app", "FAKECRI_MEMORY", "20Mi"),
		Env("app", "FAKECRI_LOG", "tick"), Env("app", "FAKECRI_LOG_EVERY", "1s"),
		Env("side", "FAKECRI_CPU", "50m"), Env("side", "FAKECRI_MEMORY", "5Mi")))
	blob := podspec.PodVolumesDir("", pod.UID) + "/" + podspec.PluginEmptyDir + "/scratch/blob"
	if err := h.Files.CreateFile(blob, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := summaryAfter(t, h, c, 30*time.Second, "busy")
	if len(sum.Pods) != 1 {
		t.Fatalf("summary pods: %+v", sum.Pods)
	}
	ps := sum.Pods[0]
	type ctr struct{ NanoCores, WorkingSet, Logs uint64 }
	type view struct {
		Containers map[string]ctr
		PodCPU     uint64
		PodMemory  uint64
		Scratch    uint64
	}
	got := view{Containers: map[string]ctr{}, PodCPU: deref(ps.CPU.UsageNanoCores), PodMemory: deref(ps.Memory.WorkingSetBytes)}
	for _, c := range ps.Containers {
		var logs uint64
		if c.Logs != nil {
			logs = deref(c.Logs.UsedBytes)
		}
		got.Containers[c.Name] = ctr{deref(c.CPU.UsageNanoCores), deref(c.Memory.WorkingSetBytes), min(logs, 1)}
	}
	for _, v := range ps.VolumeStats {
		if v.Name == "scratch" {
			got.Scratch = deref(v.UsedBytes)
		}
	}
	want := view{
		Containers: map[string]ctr{
			"app":  {NanoCores: 300_000_000, WorkingSet: 20 << 20, Logs: 1}, // logs: some bytes
			"side": {NanoCores: 50_000_000, WorkingSet: 5 << 20},
		},
		PodCPU: 350_000_000, PodMemory: 25 << 20, Scratch: 4096,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summary of the running pod (-want +got):\n%s", diff)
	}
}

func deref(v *uint64) uint64 {
	if v == nil {
		return 0
	}
	return *v
}

// TestStatsMemoryLimitIsTheCgroups: with the simulated kernel's figures,
// the Summary's memory available to an 80M container is the page-rounded
// limit its cgroup holds (79998976) less its working set, not the spec's
// 80000000; the checker's stats-memory-limit holds throughout.
func TestStatsMemoryLimitIsTheCgroups(t *testing.T) {
	h, c, _ := runningStatsPod(t, harness.Config{Seed: 15, KernelStats: true},
		NewPod("limited", "", Env("app", "FAKECRI_MEMORY", "20Mi"), Resources("app", "", "", "", "80M")))
	sum := summaryAfter(t, h, c, 30*time.Second, "limited")
	if len(sum.Pods) != 1 || len(sum.Pods[0].Containers) != 1 {
		t.Fatalf("summary pods %+v, want the one pod with its container", sum.Pods)
	}
	m := sum.Pods[0].Containers[0].Memory
	if m == nil || m.AvailableBytes == nil || m.WorkingSetBytes == nil {
		t.Fatalf("container memory %+v, want available and working set", m)
	}
	if diff := cmp.Diff(uint64(79998976), *m.AvailableBytes+*m.WorkingSetBytes); diff != "" {
		t.Errorf("available + working set (-want +got):\n%s", diff)
	}
}

// runningStatsPod starts the agent against a runtime like containerd 1.6
// (no sandbox stats, no CPU rates) with cfg, creates pod on its node and
// runs until it is Running and ready.
func runningStatsPod(t *testing.T, cfg harness.Config, pod *corev1.Pod) (*harness.Harness, *Checker, *corev1.Pod) {
	t.Helper()
	cfg.Runtime.NoSandboxStats, cfg.Runtime.NoNanoCores = true, true
	h := harness.New(cfg)
	t.Cleanup(h.Close)
	h.StartAgent()
	c := NewChecker(h)
	pod.Spec.NodeName = h.NodeName
	created := mustCreate(t, h, pod)
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, pod.Namespace, pod.Name, corev1.PodRunning, true) })
	return h, c, created
}

// summaryAfter runs the world checked for d and returns the Summary of
// the agent's latest sample for pod default/name.
func summaryAfter(t *testing.T, h *harness.Harness, c *Checker, d time.Duration, name string) *statsv1alpha1.Summary {
	t.Helper()
	runChecked(t, h, c, d)
	s, ok := h.Agent().Stats().Latest()
	if !ok {
		t.Fatalf("no stats sample after %v", d)
	}
	api, _ := APIPod(h, "default", name)
	return s.Summary(h.NodeName, []*corev1.Pod{api})
}
