//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// failedWith is a pod condition: phase Failed with reason.
func failedWith(reason string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed && p.Status.Reason == reason }
}

// A pod whose nodeSelector the node does not match is refused with the
// kubelet's NodeAffinity reason and message, and nothing runs for it.
func TestAdmissionRejectsUnmatchedNodeSelector(t *testing.T) {
	e := setup(t)
	p := e.pod("selector", true, sleeper)
	p.Spec.NodeSelector = map[string]string{"lockstep.e2e/disk": "ssd"}
	p = e.create(t, p)
	got := e.waitPod(t, p, 30*time.Second, "Failed NodeAffinity", failedWith("NodeAffinity"))
	if want := "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"; got.Status.Message != want {
		t.Errorf("message %q, want %q", got.Status.Message, want)
	}
	if _, cs := e.criOf(t, string(p.UID)); len(cs) != 0 {
		t.Errorf("a refused pod has %d containers in containerd", len(cs))
	}
}

// A pod that does not tolerate the node's NoExecute taint is refused with
// the kubelet's TaintToleration reason; one that tolerates it runs.
func TestAdmissionRejectsUntoleratedTaint(t *testing.T) {
	e := setup(t)
	taint := corev1.Taint{Key: "lockstep.e2e/dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}
	e.setTaints(t, []corev1.Taint{taint})
	t.Cleanup(func() { e.setTaints(t, nil) })
	// Admission follows the Node through a watch, which delivers the taint
	// within moments: a pod created in that moment may still be admitted,
	// so pods are created until one is refused (the first, in practice).
	var got *corev1.Pod
	start := time.Now()
	for attempt := 0; got == nil; attempt++ {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no pod refused for the taint in %v (%d attempts)", time.Since(start).Round(time.Second), attempt)
		}
		p := e.create(t, e.pod(fmt.Sprintf("untolerated%d", attempt), true, sleeper))
		cur := e.waitPod(t, p, 30*time.Second, "refused or running", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodRunning
		})
		if failedWith("TaintToleration")(cur) {
			got = cur
		}
	}
	t.Logf("FIGURE pod refused for a taint %v after the taint was set", time.Since(start).Round(time.Millisecond))
	if want := "Pod was rejected: Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"; got.Status.Message != want {
		t.Errorf("message %q, want %q", got.Status.Message, want)
	}
	ok := e.pod("tolerating", true, sleeper)
	ok.Spec.Tolerations = []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	ok = e.create(t, ok)
	e.waitPod(t, ok, 60*time.Second, "Running and Ready", podReady)
}

func (e *env) setTaints(t *testing.T, taints []corev1.Taint) {
	t.Helper()
	poll(t, 20*time.Second, "node taints set", func() (bool, error) {
		n, err := e.admin.CoreV1().Nodes().Get(context.Background(), e.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		n.Spec.Taints = taints
		_, err = e.admin.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		return err == nil, err
	})
}

// memAvailable reads the host's MemAvailable (what lockstep's
// memory.available is on this host), in bytes.
func memAvailable(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no MemAvailable in /proc/meminfo")
	return 0
}

// withLockstepArgs restarts lockstep with extra arguments, and restores
// its arguments (restarting it again) when the test ends.
func (e *env) withLockstepArgs(t *testing.T, extra ...string) {
	t.Helper()
	path := filepath.Join(e.dir, "lockstep.args")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.TrimRight(string(orig), "\n") + "\n" + strings.Join(extra, "\n") + "\n"
	if err := os.WriteFile(path, []byte(args), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Error(err)
			return
		}
		e.restartLockstep(t)
		e.waitNodeReady(t, 60*time.Second)
	})
	e.restartLockstep(t)
	e.waitNodeReady(t, 60*time.Second)
}

// With a soft memory.available threshold set just under the host's
// available memory, a BestEffort pod that allocates pushes the node under
// it: the BestEffort pod is evicted (Failed, Evicted, DisruptionTarget),
// the Guaranteed pod beside it keeps running, and the node reports
// MemoryPressure.
func TestSoftMemoryEvictionTakesBestEffortFirst(t *testing.T) {
	e := setup(t)
	guaranteed := e.pod("guaranteed", true, sleeper)
	guaranteed.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	guaranteed = e.create(t, guaranteed)
	e.waitPod(t, guaranteed, 60*time.Second, "Running and Ready", podReady)

	// The hog allocates 1.5Gi; the threshold sits 512Mi under what is
	// available now, so the other processes of a shared machine have that
	// much room before they could set the pressure off themselves.
	const hog, margin = 1536 << 20, 512 << 20
	avail := memAvailable(t)
	threshold := avail - margin
	t.Logf("FIGURE host MemAvailable %d MiB; soft memory.available threshold %d MiB", avail>>20, threshold>>20)
	e.withLockstepArgs(t,
		fmt.Sprintf("--eviction-soft=memory.available<%dMi", threshold>>20),
		"--eviction-soft-grace-period=memory.available=5s",
		"--eviction-max-pod-grace-period=5",
		"--eviction-pressure-transition-period=30s")
	// The BestEffort pod holds a 1.5Gi string in its shell.
	be := e.create(t, e.pod("besteffort", true, fmt.Sprintf(`x=$(head -c %d /dev/zero | tr '\0' x); echo allocated; while :; do sleep 1; done`, hog)))
	start := time.Now()
	got := e.waitPod(t, be, 120*time.Second, "Failed Evicted", failedWith("Evicted"))
	t.Logf("FIGURE BestEffort pod evicted %v after creation", time.Since(start).Round(time.Second))
	if !strings.HasPrefix(got.Status.Message, "The node was low on resource: memory. ") {
		t.Errorf("eviction message %q", got.Status.Message)
	}
	var dt *corev1.PodCondition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == corev1.DisruptionTarget {
			dt = &got.Status.Conditions[i]
		}
	}
	if dt == nil || dt.Status != corev1.ConditionTrue || dt.Reason != corev1.PodReasonTerminationByKubelet {
		t.Errorf("DisruptionTarget condition %+v", dt)
	}
	if g := e.get(t, guaranteed); !podReady(g) {
		t.Errorf("the Guaranteed pod is not running: phase %s reason %q", g.Status.Phase, g.Status.Reason)
	}
	n, err := e.admin.CoreV1().Nodes().Get(context.Background(), e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeMemoryPressure {
			t.Logf("node MemoryPressure %s (%s)", c.Status, c.Reason)
		}
	}
}
