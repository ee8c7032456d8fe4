//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/cpuset"
)

// cpuManagerState is the CPU manager's checkpoint under lockstep's root
// directory.
func (e *env) cpuManagerState() string {
	return filepath.Join(e.dir, "lockstep", "cpu_manager_state")
}

// withStaticCPUManager restarts the shared e2e node with the static CPU
// manager policy and CPU 0 reserved, and puts it back (policy none) when
// the test ends. A policy change needs the checkpoint deleted, as with
// the kubelet, which is safe here: the node runs no pod then (each test
// deletes its pods before its cleanup restores the node).
func (e *env) withStaticCPUManager(t *testing.T) {
	t.Helper()
	path := filepath.Join(e.dir, "lockstep.args")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	restart := func(args []byte) {
		if err := os.WriteFile(path, args, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(e.cpuManagerState()); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		e.restartLockstep(t)
		e.waitNodeReady(t, 60*time.Second)
	}
	t.Cleanup(func() { restart(orig) })
	restart([]byte(strings.TrimRight(string(orig), "\n") + "\n--cpu-manager-policy=static\n--reserved-cpus=0\n--cpu-manager-reconcile-period=2s\n"))
}

// cpusAllowed is the last Cpus_allowed_list a looping container printed.
func (e *env) cpusAllowed(t *testing.T, p *corev1.Pod) (cpuset.CPUSet, string) {
	t.Helper()
	code, body := e.logs(t, p, "c", e.adminTok)
	if code != 200 {
		return cpuset.New(), fmt.Sprintf("logs: %d %q", code, body)
	}
	lines := strings.Split(strings.TrimSpace(body), "\n")
	last := strings.TrimSpace(strings.TrimPrefix(lines[len(lines)-1], "Cpus_allowed_list:"))
	set, err := cpuset.Parse(last)
	if err != nil {
		return cpuset.New(), fmt.Sprintf("last line %q", lines[len(lines)-1])
	}
	return set, last
}

// logLineCount is how many lines the pod's container "c" has logged.
func (e *env) logLineCount(t *testing.T, p *corev1.Pod) int {
	t.Helper()
	code, body := e.logs(t, p, "c", e.adminTok)
	if code != 200 {
		return 0
	}
	return strings.Count(body, "\n")
}

// waitNewLines waits until each looping container has printed a whole
// line after the call began (they print every second), so that
// cpusAllowed then reports what they run on now.
func (e *env) waitNewLines(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	had := make([]int, len(pods))
	for i, p := range pods {
		had[i] = e.logLineCount(t, p)
	}
	for i, p := range pods {
		poll(t, 20*time.Second, fmt.Sprintf("two more lines from pod %s", p.Name), func() (bool, error) {
			m := e.logLineCount(t, p)
			return m >= had[i]+2, fmt.Errorf("%d lines, had %d", m, had[i])
		})
	}
}

// waitCPUs waits until the pod's container runs on exactly want.
func (e *env) waitCPUs(t *testing.T, p *corev1.Pod, want cpuset.CPUSet, d time.Duration) {
	t.Helper()
	poll(t, d, fmt.Sprintf("pod %s on CPUs %s", p.Name, want), func() (bool, error) {
		got, msg := e.cpusAllowed(t, p)
		return got.Equals(want), fmt.Errorf("runs on %q", msg)
	})
}

// TestStaticCPUManagerOnContainerd: with --cpu-manager-policy=static and
// --reserved-cpus=0, a Guaranteed pod asking for cpu: 1 runs on one CPU
// of its own (not CPU 0); a BestEffort pod started before it moves off
// that CPU within the reconcile period, keeps off it across an agent
// restart (the checkpoint), and gets it back once the Guaranteed pod is
// deleted. Allocatable cpu loses the reserved CPU.
func TestStaticCPUManagerOnContainerd(t *testing.T) {
	e := setup(t)
	all := cpuset.New()
	for i := 0; i < runtime.NumCPU(); i++ {
		all = all.Union(cpuset.New(i))
	}
	if all.Size() < 2 {
		t.Skipf("the static policy needs 2 CPUs or more; this host has %d", all.Size())
	}
	e.withStaticCPUManager(t)
	poll(t, 30*time.Second, "allocatable cpu one less than capacity", func() (bool, error) {
		node, err := e.admin.CoreV1().Nodes().Get(context.Background(), e.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		capCPU, allocCPU := node.Status.Capacity[corev1.ResourceCPU], node.Status.Allocatable[corev1.ResourceCPU]
		return capCPU.Value()-allocCPU.Value() == 1, fmt.Errorf("capacity cpu %s, allocatable %s", capCPU.String(), allocCPU.String())
	})
	const loop = `while :; do grep Cpus_allowed_list /proc/self/status; sleep 1; done`

	be := e.create(t, e.pod("cpu-besteffort", false, loop))
	e.waitPod(t, be, 60*time.Second, "Running and Ready", podReady)
	e.waitCPUs(t, be, all, 20*time.Second)

	g := e.pod("cpu-guaranteed", false, loop)
	one := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("32Mi")}
	g.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: one, Limits: one}
	g = e.create(t, g)
	start := time.Now()
	e.waitPod(t, g, 60*time.Second, "Running and Ready", podReady)
	var mine cpuset.CPUSet
	poll(t, 20*time.Second, "the Guaranteed pod's cpuset", func() (bool, error) {
		got, msg := e.cpusAllowed(t, g)
		mine = got
		return got.Size() == 1, fmt.Errorf("runs on %q", msg)
	})
	if mine.Contains(0) {
		t.Fatalf("the Guaranteed pod runs on the reserved CPU 0 (%s)", mine)
	}
	shared := all.Difference(mine)
	e.waitCPUs(t, be, shared, 20*time.Second)
	t.Logf("FIGURE Guaranteed pod on CPU %s; BestEffort pod moved to %s %v after the Guaranteed pod's creation", mine, shared, time.Since(start).Round(time.Second))
	if b, err := os.ReadFile(e.cpuManagerState()); err != nil || !strings.Contains(string(b), `"policyName": "static"`) || !strings.Contains(string(b), string(g.UID)) {
		t.Errorf("checkpoint %s: %v\n%s", e.cpuManagerState(), err, b)
	}

	// An agent restart keeps the assignment (the checkpoint survives).
	e.restartLockstep(t)
	e.waitNodeReady(t, 60*time.Second)
	// The new agent has synced both pods, then reconciled every running
	// container's cpuset twice; the containers print what they run on
	// after that.
	e.waitPodsSettled(t, 60*time.Second, g, be)
	e.waitMoreCycles(t, metricCPUReconciles, nil, 2, 30*time.Second)
	e.waitNewLines(t, g, be)
	if got, msg := e.cpusAllowed(t, g); !got.Equals(mine) {
		t.Errorf("after a restart the Guaranteed pod runs on %q, want %s", msg, mine)
	}
	if got, msg := e.cpusAllowed(t, be); !got.Equals(shared) {
		t.Errorf("after a restart the BestEffort pod runs on %q, want %s", msg, shared)
	}

	// Deleting the Guaranteed pod gives its CPU back to the shared pool.
	e.deleteAndWait(t, g, 60*time.Second)
	e.waitCPUs(t, be, all, 20*time.Second)
}
