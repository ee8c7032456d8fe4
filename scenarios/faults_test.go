package scenarios

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// createMixed creates pods of every kind of behaviour the stale-list and
// crash scenarios stress: long-running, crash-looping, run-to-completion
// under each restart policy, with an init container.
func createMixed(t *testing.T, hnode string, create func(*corev1.Pod)) []string {
	t.Helper()
	var names []string
	add := func(p *corev1.Pod) { create(p); names = append(names, p.Name) }
	for i := range 3 {
		add(NewPod(fmt.Sprintf("server-%d", i), hnode, Container("sidecar")))
	}
	add(NewPod("crasher", hnode, Exits("app", time.Second, 1)))
	add(NewPod("job-never", hnode, Restart(corev1.RestartPolicyNever), Exits("app", 3*time.Second, 0)))
	add(NewPod("job-never-fails", hnode, Restart(corev1.RestartPolicyNever), Exits("app", 2*time.Second, 1)))
	add(NewPod("job-onfailure", hnode, Restart(corev1.RestartPolicyOnFailure), Exits("app", 2*time.Second, 0)))
	add(NewPod("init", hnode, Init("setup", time.Second, 0)))
	return names
}

func reportViolations(t *testing.T, c *Checker) {
	t.Helper()
	for _, v := range c.Violations() {
		t.Errorf("%s", v)
	}
}

// TestStaleRelistsNeverDuplicate runs pods under a runtime whose List calls
// lag the truth by seconds (the relist race behind upstream #23636 and
// #121003): no container may ever run twice, nor a Never container twice.
func TestStaleRelistsNeverDuplicate(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{21, 22, 23, 24, 25} {
		t.Run(fmt.Sprint("seed-", seed), func(t *testing.T) {
			t.Parallel()
			h := start(t, seed)
			c := NewChecker(h)
			h.Runtime.SetListStaleness(3 * time.Second)
			names := createMixed(t, h.NodeName, func(p *corev1.Pod) { mustCreate(t, h, p) })
			// A controller touching pods every 700 ms: each update makes the
			// agent sync the pod while the stale view may hide what it just
			// started (the trigger of upstream #23636).
			for i := range 400 {
				if err := RunChecked(h, c, 700*time.Millisecond, 100*time.Millisecond); err != nil {
					t.Fatal(err)
				}
				touch(t, h, names, i)
			}
			reportViolations(t, c)
			// The runtime refuses a second sandbox or container of the same
			// name and attempt (as containerd does), so acting on the stale
			// view would show as failed syncs: there must be none.
			for _, e := range h.API.User().Events() {
				if e.Reason == "FailedCreatePodSandBox" || e.Reason == "Failed" {
					t.Errorf("the agent acted on a stale view: event %s on %s: %s", e.Reason, e.Object.Name, e.Message)
				}
			}
			h.Runtime.SetListStaleness(0)
			runUntil(t, h, "servers Running after staleness ends", time.Minute, func() bool {
				return PodIs(h, "default", "server-0", corev1.PodRunning, true) &&
					PodIs(h, "default", "server-2", corev1.PodRunning, true) &&
					PodIs(h, "default", "job-never", corev1.PodSucceeded, false) &&
					PodIs(h, "default", "job-never-fails", corev1.PodFailed, false)
			})
		})
	}
}

// TestAgentCrashAndRestart kills the agent again and again, mid-sync (the
// runtime is slow, so kills land inside CRI calls), deletes and creates
// pods while it is down, and restarts it from nothing: no container runs
// twice, no pod is lost, deletions complete, running containers are
// adopted rather than restarted.
func TestAgentCrashAndRestart(t *testing.T) {
	t.Parallel()
	h := start(t, 31)
	c := NewChecker(h)
	createMixed(t, h.NodeName, func(p *corev1.Pod) { mustCreate(t, h, p) })
	runUntil(t, h, "servers running", time.Minute, func() bool { return PodIs(h, "default", "server-2", corev1.PodRunning, true) })
	servers := map[string]string{}
	for _, ct := range TrueContainers(h) {
		p, _ := APIPod(h, "default", "server-0")
		if string(ct.PodUID) == string(p.UID) {
			servers[ct.Name] = ct.ID
		}
	}
	if err := h.Runtime.InjectLatency("CreateContainer", 50*time.Millisecond, 400*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if err := h.Runtime.InjectLatency("StopContainer", 50*time.Millisecond, 400*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if err := RunChecked(h, c, time.Duration(100+i*173)*time.Millisecond, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		h.CrashAgent()
		switch i {
		case 3:
			if err := h.API.User().DeletePodGracefully("default", "server-1", nil); err != nil {
				t.Fatal(err)
			}
		case 6:
			mustCreate(t, h, NewPod("late", h.NodeName))
		}
		if err := RunChecked(h, c, 500*time.Millisecond, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		h.StartAgent()
	}
	h.Runtime.ClearFaults()
	if err := RunChecked(h, c, 2*time.Minute, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	reportViolations(t, c)
	for _, name := range []string{"server-0", "server-2", "late", "init"} {
		if !PodIs(h, "default", name, corev1.PodRunning, true) {
			p, _ := APIPod(h, "default", name)
			t.Errorf("pod %s is not Running and Ready after the crashes: %+v", name, summarize(p))
		}
	}
	if _, ok := APIPod(h, "default", "server-1"); ok {
		t.Errorf("server-1 was deleted while the agent was down, but its deletion never completed")
	}
	p, _ := APIPod(h, "default", "server-0")
	for _, ct := range TrueContainers(h) {
		if string(ct.PodUID) == string(p.UID) && servers[ct.Name] != ct.ID {
			t.Errorf("server-0's container %s was restarted across agent restarts (%s → %s)", ct.Name, servers[ct.Name], ct.ID)
		}
	}
	for _, name := range []string{"job-never", "job-onfailure"} {
		if !PodIs(h, "default", name, corev1.PodSucceeded, false) {
			p, _ := APIPod(h, "default", name)
			t.Errorf("%s: %+v, want Succeeded", name, summarize(p))
		}
	}
}

// touch sets an annotation on every named pod that still exists.
func touch(t *testing.T, h *harness.Harness, names []string, round int) {
	t.Helper()
	for _, name := range names {
		p, ok := APIPod(h, "default", name)
		if !ok {
			continue
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations["example.com/touched"] = fmt.Sprint(round)
		if _, err := h.API.User().UpdatePod(p); err != nil {
			t.Fatalf("touch %s: %v", name, err)
		}
	}
}
