package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podutil"
	"github.com/lockstep-dev/lockstep/node/shutdown"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// startShutdownNode builds a node configured as the node-shutdown
// scenario's, with a checker.
func startShutdownNode(t *testing.T, seed uint64) (*harness.Harness, *Checker) {
	t.Helper()
	cfg := harness.Config{Seed: seed, Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) }}
	shutdownScenario().Configure(&cfg)
	h := harness.New(cfg)
	t.Cleanup(h.Close)
	h.StartAgent()
	return h, NewChecker(h)
}

func withPriority(p int32) PodOption { return func(pod *corev1.Pod) { pod.Spec.Priority = &p } }

// TestGracefulNodeShutdown: on logind's announcement the node turns
// NotReady ("node is shutting down"), the non-critical pods are stopped
// with their grace capped at the group's 20 s, the critical pod only
// once the slow one is gone, 20 s later, with 10 s; every stopped pod is
// Failed, Terminated, with a DisruptionTarget condition; a pod arriving
// meanwhile is refused (NodeShutdown); the delay lock is released when
// all stopped; a cancellation makes the node Ready again.
func TestGracefulNodeShutdown(t *testing.T) {
	h, c := startShutdownNode(t, 7)
	mustCreate(t, h, NewPod("web", h.NodeName, Grace(30)))
	mustCreate(t, h, NewPod("short", h.NodeName, Grace(5), withPriority(1000)))
	mustCreate(t, h, NewPod("slow", h.NodeName, Grace(60), IgnoresSIGTERM("app"), withPriority(1000)))
	mustCreate(t, h, NewPod("dns", h.NodeName, Grace(30), withPriority(podutil.SystemCriticalPriority)))
	names := []string{"web", "short", "slow", "dns"}
	runUntil(t, h, "four pods running", time.Minute, func() bool {
		for _, n := range names {
			if !PodIs(h, "default", n, corev1.PodRunning, false) {
				return false
			}
		}
		return true
	})
	if st := h.Shutdown(); !st.Inhibited || st.Delay != 30*time.Second {
		t.Fatalf("logind: %+v, want a 30 s delay lock held", st)
	}
	var stops []string
	start := h.K.Elapsed()
	h.OnStopContainer(func(id string, grace int64) {
		uid, _ := containerPod(h, id)
		for _, n := range names {
			if p, _ := APIPod(h, "default", n); p != nil && p.UID == uid {
				stops = append(stops, fmt.Sprintf("+%v %s grace=%d", (h.K.Elapsed()-start).Round(time.Second), n, grace))
			}
		}
	})
	c.ShutdownStarting()
	h.ShutdownNode()
	// Written at once, not at the next 10 s status update.
	if err := RunChecked(h, c, time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	cond := nodeReadyCondition(h.API.User().Nodes(), h.NodeName)
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != "KubeletNotReady" || cond.Message != "node is shutting down" {
		t.Errorf("Ready condition 1 s into the shutdown: %+v", cond)
	}
	if err := RunChecked(h, c, 4*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	late := mustCreate(t, h, NewPod("late", h.NodeName))
	if err := RunChecked(h, c, 40*time.Second, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// The kills reach the runtime at the workers' next sync; the critical
	// group starts when the first group's 20 s are over (slow ignores
	// SIGTERM and is still stopping).
	want := []string{"+1s web grace=20", "+1s short grace=5", "+1s slow grace=20", "+20s dns grace=10"}
	if diff := cmp.Diff(want, sortedStops(stops, want)); diff != "" {
		t.Errorf("StopContainer calls (-want +got):\n%s", diff)
	}
	st := h.Shutdown()
	if st.Inhibited || st.Released < 0 || st.Released-start > 22*time.Second {
		t.Errorf("logind: %+v, want the lock released once dns stopped (+20 s and its stop)", st)
	}
	for _, n := range names {
		p, _ := APIPod(h, "default", n)
		got := [3]string{string(p.Status.Phase), p.Status.Reason, p.Status.Message}
		if want := [3]string{"Failed", shutdown.Reason, shutdown.Message}; got != want {
			t.Errorf("pod %s status %v, want %v", n, got, want)
		}
		var dt *corev1.PodCondition
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.DisruptionTarget {
				dt = &p.Status.Conditions[i]
			}
		}
		if dt == nil || dt.Status != corev1.ConditionTrue || dt.Reason != corev1.PodReasonTerminationByKubelet || dt.Message != shutdown.Message {
			t.Errorf("pod %s DisruptionTarget: %+v", n, dt)
		}
	}
	if p, _ := APIPod(h, "default", late.Name); p.Status.Phase != corev1.PodFailed || p.Status.Reason != shutdown.NotAdmittedReason || p.Status.Message != "Pod was rejected: "+shutdown.NotAdmittedMessage {
		t.Errorf("pod created during the shutdown: %s %q %q, want Failed %s", p.Status.Phase, p.Status.Reason, p.Status.Message, shutdown.NotAdmittedReason)
	}
	h.CancelShutdown()
	c.ShutdownCancelled()
	runUntil(t, h, "node Ready after the cancellation", 30*time.Second, func() bool { return nodeCondition(h, corev1.NodeReady) == corev1.ConditionTrue })
	if st := h.Shutdown(); !st.Inhibited {
		t.Errorf("logind: %+v, want the lock taken again after the cancellation", st)
	}
	if v := c.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}

// sortedStops orders the stops of one instant as want does (the agent
// stops a group's pods in the order it lists them, which is its own).
func sortedStops(got, want []string) []string {
	out := []string{}
	used := make([]bool, len(got))
	for _, w := range want {
		for i, g := range got {
			if !used[i] && g == w {
				out, used[i] = append(out, g), true
				break
			}
		}
	}
	for i, g := range got {
		if !used[i] {
			out = append(out, g)
		}
	}
	return out
}

// The node-shutdown scenario holds over a few seeds.
func TestShutdownScenario(t *testing.T) {
	t.Parallel()
	sc, err := Lookup("node-shutdown")
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []uint64{1, 2, 3, 4} {
		plan := Generate(sc, seed, SeededDrawer(seed))
		if !strings.Contains(plan.ActionList(), "node-shutdown") {
			plan.Actions = append([]Action{{Op: "create-qos", Args: [3]int{3, 0, 0}, RunMS: 5000}, {Op: "node-shutdown", Args: [3]int{40000}, RunMS: 1000}}, plan.Actions...)
		}
		if res := Execute(plan, Options{}); res.Failed() {
			t.Errorf("%s", res.Report())
		}
	}
	// Found by sweeps: a pod deleted just before the shutdown, with a
	// longer grace of its own, was left to its deletion's grace.
	for seed, actions := range map[uint64]string{
		81: "node-shutdown:47048,0,0@100;create:6,0,0@100;delete:1,0,0@100;node-shutdown:49357,0,0@100",
		19: "create:13,0,0@209;create-qos:1,1,2@100;create:8,0,0@203;create-qos:2,0,1@100;create:5,0,0@206;create:6,0,0@189;delete:5,0,0@100;node-shutdown:48014,0,0@100",
	} {
		acts, err := ParseActions(actions)
		if err != nil {
			t.Fatal(err)
		}
		if res := Execute(Plan{Scenario: "node-shutdown", Seed: seed, Actions: acts}, Options{}); res.Failed() {
			t.Errorf("%s", res.Report())
		}
	}
}
