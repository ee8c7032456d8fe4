package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// startEviction builds a node configured as the eviction scenario's.
func startEviction(t *testing.T, seed uint64) *harness.Harness {
	t.Helper()
	cfg := harness.Config{Seed: seed, Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) }}
	evictionScenario().Configure(&cfg)
	h := harness.New(cfg)
	t.Cleanup(h.Close)
	h.StartAgent()
	return h
}

// qosPod is create-qos's pod: class 0 BestEffort, 1 Burstable, 2
// Guaranteed, 3 critical; usage level 0..5.
func qosPod(t *testing.T, h *harness.Harness, name string, class, level int) {
	t.Helper()
	r := &run{h: h}
	r.step = 0
	if err := opCreateQoSNamed(r, name, [3]int{class, 1, level}); err != nil {
		t.Fatal(err)
	}
}

func nodeMemoryAvailable(h *harness.Harness, target uint64) {
	u, m := h.Runtime.NodeUsage(), h.Runtime.Node()
	h.Runtime.SetNodeMemoryUsage(subFloor(m.MemoryCapacity, target+u.MemoryWorkingSet-m.MemoryBase))
	h.MemoryMoved()
}

func nodeCondition(h *harness.Harness, t corev1.NodeConditionType) corev1.ConditionStatus {
	var n *corev1.Node
	for _, node := range h.API.User().Nodes() {
		if node.Name == h.NodeName {
			n = node
		}
	}
	if n == nil {
		return ""
	}
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// Under a hard memory threshold the Burstable pod over its request by the
// most goes first; it is Failed, reason Evicted, with upstream's message
// and a DisruptionTarget condition; the node reports MemoryPressure until
// the transition period has passed after the pressure ended; a crashed
// and restarted agent never runs the evicted pod again.
func TestEvictionOfTheFirstRanked(t *testing.T) {
	h := startEviction(t, 4)
	qosPod(t, h, "guaranteed", 2, 5) // 512Mi of a 1500Mi request
	qosPod(t, h, "be-big", 0, 4)     // 256Mi, no request
	qosPod(t, h, "be-small", 0, 1)   // 32Mi
	qosPod(t, h, "burstable", 1, 5)  // 512Mi of a 64Mi request
	qosPod(t, h, "critical", 3, 5)   // 512Mi, system-node-critical
	runUntil(t, h, "five pods running", time.Minute, func() bool {
		for _, n := range []string{"guaranteed", "be-big", "be-small", "burstable", "critical"} {
			if !PodIs(h, "default", n, corev1.PodRunning, false) {
				return false
			}
		}
		return true
	})
	nodeMemoryAvailable(h, 60<<20) // under memory.available<100Mi
	runUntil(t, h, "an eviction", 30*time.Second, func() bool { return PodIs(h, "default", "burstable", corev1.PodFailed, false) })
	p, _ := APIPod(h, "default", "burstable")
	if p.Status.Reason != "Evicted" || !strings.HasPrefix(p.Status.Message,
		"The node was low on resource: memory. Threshold quantity: 100Mi, available: 60Mi. Container app was using 512Mi, request is 64Mi, has larger consumption of memory.") {
		t.Errorf("evicted pod status: reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	var dt *corev1.PodCondition
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.DisruptionTarget {
			dt = &p.Status.Conditions[i]
		}
	}
	if dt == nil || dt.Status != corev1.ConditionTrue || dt.Reason != corev1.PodReasonTerminationByKubelet {
		t.Errorf("DisruptionTarget condition: %+v", dt)
	}
	runUntil(t, h, "MemoryPressure", 30*time.Second, func() bool { return nodeCondition(h, corev1.NodeMemoryPressure) == corev1.ConditionTrue })
	for _, n := range []string{"guaranteed", "critical", "be-big", "be-small"} {
		if !PodIs(h, "default", n, corev1.PodRunning, false) {
			t.Errorf("pod %s is not running after one eviction", n)
		}
	}
	nodeMemoryAvailable(h, 3<<30)
	ended := h.K.Elapsed()
	runUntil(t, h, "MemoryPressure cleared", 2*time.Minute, func() bool { return nodeCondition(h, corev1.NodeMemoryPressure) == corev1.ConditionFalse })
	if took := h.K.Elapsed() - ended; took < evictionTransition-10*time.Second {
		t.Errorf("MemoryPressure cleared %v after the pressure ended, before the transition period %v", took, evictionTransition)
	}
	h.CrashAgent()
	h.K.RunFor(2 * time.Second)
	h.StartAgent()
	h.K.RunFor(30 * time.Second)
	for _, ct := range TrueContainers(h) {
		if ct.PodUID == p.UID && ct.State.String() == "CONTAINER_RUNNING" {
			t.Errorf("evicted pod runs again: %+v", ct)
		}
	}
}

// Admission: OutOfpods past maxPods, OutOfmemory past allocatable, and
// under memory pressure a BestEffort pod is refused while a Burstable one
// is admitted.
func TestAdmissionRejections(t *testing.T) {
	h := startEviction(t, 5)
	// Admitted in creation order: five Guaranteed pods of 1500Mi (7500Mi
	// of 8092Mi), a sixth that does not fit, a BestEffort pod, and another
	// past maxPods 6.
	for _, n := range []string{"g0", "g1", "g2", "g3", "g4", "g5", "be0", "be1"} {
		class := 2
		if strings.HasPrefix(n, "be") {
			class = 0
		}
		qosPod(t, h, n, class, 0)
		h.K.RunFor(time.Second)
	}
	runUntil(t, h, "admission decided", time.Minute, func() bool {
		return PodIs(h, "default", "g5", corev1.PodFailed, false) && PodIs(h, "default", "be1", corev1.PodFailed, false) &&
			PodIs(h, "default", "be0", corev1.PodRunning, false)
	})
	got := map[string]string{}
	for _, n := range []string{"g5", "be1"} {
		p, _ := APIPod(h, "default", n)
		got[n] = p.Status.Reason + ": " + p.Status.Message
	}
	want := map[string]string{
		"g5":  "OutOfmemory: Pod was rejected: Node didn't have enough resource: memory, requested: 1572864000, used: 7864320000, capacity: 8485076992",
		"be1": "OutOfpods: Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 6, capacity: 6",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	for _, n := range []string{"g3", "g4"} {
		_ = h.API.User().DeletePodGracefully("default", n, nil)
	}
	nodeMemoryAvailable(h, 450<<20) // under the soft 600Mi threshold: MemoryPressure at once
	runUntil(t, h, "MemoryPressure", 30*time.Second, func() bool { return nodeCondition(h, corev1.NodeMemoryPressure) == corev1.ConditionTrue })
	qosPod(t, h, "be-late", 0, 0)
	qosPod(t, h, "burstable-late", 1, 0)
	runUntil(t, h, "pressure admission", 30*time.Second, func() bool {
		return PodIs(h, "default", "be-late", corev1.PodFailed, false) && PodIs(h, "default", "burstable-late", corev1.PodRunning, false)
	})
	p, _ := APIPod(h, "default", "be-late")
	if p.Status.Reason != "Evicted" || p.Status.Message != "Pod was rejected: The node had condition: [MemoryPressure]. " {
		t.Errorf("BestEffort pod under memory pressure: %q %q", p.Status.Reason, p.Status.Message)
	}
}

// A critical pod that does not fit preempts as the kubelet does: the
// BestEffort pod goes (Failed, Preempting, DisruptionTarget), the critical
// pod runs.
func TestCriticalPodPreempts(t *testing.T) {
	h := startEviction(t, 6)
	for _, n := range []string{"g0", "g1", "g2", "be0", "g3", "g4"} {
		class := 2
		if strings.HasPrefix(n, "be") {
			class = 0
		}
		qosPod(t, h, n, class, 0)
		h.K.RunFor(time.Second)
	}
	runUntil(t, h, "six pods running", time.Minute, func() bool { return PodIs(h, "default", "g4", corev1.PodRunning, false) })
	qosPod(t, h, "critical", 3, 0)
	runUntil(t, h, "the critical pod running", time.Minute, func() bool { return PodIs(h, "default", "critical", corev1.PodRunning, false) })
	p, _ := APIPod(h, "default", "be0")
	if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "Preempting" || p.Status.Message != "Preempted in order to admit critical pod" {
		t.Errorf("preempted pod: %s %q %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	for _, n := range []string{"g0", "g1", "g2", "g3", "g4"} {
		if !PodIs(h, "default", n, corev1.PodRunning, false) {
			t.Errorf("Guaranteed pod %s was disturbed", n)
		}
	}
}

// Regressions found by sweeps, replayed as plans.
func TestPressureRegressions(t *testing.T) {
	for name, p := range map[string]struct {
		scenario string
		seed     uint64
		actions  string
	}{
		// After a restart under DiskPressure a stale list re-admits a pod
		// being deleted: refused, then killed before its first sync wrote
		// the refusal; it must still get a status and be deleted.
		"refused-then-killed-before-first-sync": {"mixed", 4, "wait:0,0,0@2882;create:9,0,0@101;create:4,0,0@102;cri-latency:4,3,8@101;api-conflicts:3,0,0@13746;wait:0,0,0@266;wait:0,0,0@107;wait:0,0,0@101;sandbox-no-ip:3,0,0@227;node-disk:1,0,0@12412;node-disk:1,1,0@112;api-stale-reads:708,0,0@167;api-compact:0,0,0@181;api-flaky:31,0,0@138;api-compact:0,0,0@100;wait:0,0,0@102;api-compact:0,0,0@162;update:7,0,0@2192;api-fail-writes:5,0,0@113;delete:14,0,0@101;crash:28,0,0@20000"},
		// A container OOM-killed at the very instant of the final check.
		"oom-at-the-final-check": {"oom", 0, "wait:0,0,0@285;create-oom:0,2,2@2972;create-oom:1,0,1@185;create-oom:0,0,2@159"},
	} {
		t.Run(name, func(t *testing.T) {
			acts, err := ParseActions(p.actions)
			if err != nil {
				t.Fatal(err)
			}
			if res := Execute(Plan{Scenario: p.scenario, Seed: p.seed, Actions: acts}, Options{}); res.Failed() {
				t.Fatal(res.Report())
			}
		})
	}
}

// TestAdmissionSeesATaintAddedLater: admission follows the node's Node
// through a watch, so a NoExecute taint an administrator adds is honoured
// for the very next pod (TaintToleration), and its removal for the pod
// after, with no Node read while idle or to admit a pod.
func TestAdmissionSeesATaintAddedLater(t *testing.T) {
	h := harness.New(harness.Config{Seed: 11,
		Replay: func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) }})
	t.Cleanup(h.Close)
	h.StartAgent()
	mustCreate(t, h, NewPod("before", h.NodeName))
	runUntil(t, h, "before Running", time.Minute, func() bool { return PodIs(h, "default", "before", corev1.PodRunning, true) })
	if got := h.API.User().OpenNodeWatches(); got != 1 {
		t.Errorf("%d Node watches open, want 1", got)
	}
	reads := func() int { return h.API.Requests()[apiserver.Request{Verb: apiserver.VerbGet, Resource: "nodes"}] }
	idle := reads()
	if err := h.K.RunFor(5 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := reads(); got != idle {
		t.Errorf("the idle agent read its Node %d times in 5 minutes, want 0", got-idle)
	}
	taint := corev1.Taint{Key: "example.com/drain", Effect: corev1.TaintEffectNoExecute}
	if !h.API.User().EditNode(h.NodeName, func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, taint) }) {
		t.Fatal("no node to taint")
	}
	// The watch delivers the edit in the same instant; a pod created in
	// that instant races it (as on a real node), one a millisecond later
	// does not.
	if err := h.K.RunFor(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, h, NewPod("after", h.NodeName))
	runUntil(t, h, "after refused", time.Minute, func() bool { return PodIs(h, "default", "after", corev1.PodFailed, false) })
	if p, _ := APIPod(h, "default", "after"); p.Status.Reason != "TaintToleration" {
		t.Errorf("pod after the taint: reason %q (%s), want TaintToleration", p.Status.Reason, p.Status.Message)
	}
	if !PodIs(h, "default", "before", corev1.PodRunning, true) {
		t.Error("the pod admitted before the taint no longer runs (admission does not evict)")
	}
	if !h.API.User().EditNode(h.NodeName, func(n *corev1.Node) { n.Spec.Taints = nil }) {
		t.Fatal("no node to untaint")
	}
	if err := h.K.RunFor(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	before := reads()
	mustCreate(t, h, NewPod("untainted", h.NodeName))
	runUntil(t, h, "untainted Running", time.Minute, func() bool { return PodIs(h, "default", "untainted", corev1.PodRunning, true) })
	if got := reads(); got != before {
		t.Errorf("admitting a pod read the Node %d times, want 0 (the watch has it)", got-before)
	}
}

// A memory spike is acted upon at once: the memcg threshold notifier
// (armed at capacity minus the hard memory.available threshold) wakes the
// eviction manager between its 10 s cycles, so the pod over its request
// is evicted within a second of the spike, not at the next cycle.
func TestMemoryThresholdWakesTheEvictionManager(t *testing.T) {
	h := startEviction(t, 8)
	qosPod(t, h, "burstable", 1, 5) // 512Mi of a 64Mi request
	runUntil(t, h, "burstable running", time.Minute, func() bool { return PodIs(h, "default", "burstable", corev1.PodRunning, false) })
	// Half-way between two periodic cycles (the first ran at the agent's
	// start, at 0 s).
	if err := h.K.RunFor(10*time.Second - h.K.Elapsed()%(10*time.Second) + 5*time.Second); err != nil {
		t.Fatal(err)
	}
	fired := h.MemoryThresholdFired()
	spike := h.K.Elapsed()
	nodeMemoryAvailable(h, 60<<20) // under memory.available<100Mi
	runUntil(t, h, "the eviction", 30*time.Second, func() bool { return PodIs(h, "default", "burstable", corev1.PodFailed, false) })
	if took := h.K.Elapsed() - spike; took > 2*time.Second {
		t.Errorf("pod evicted %v after the spike, want within 2 s (not at the next 10 s cycle)", took)
	}
	if got := h.MemoryThresholdFired() - fired; got != 1 {
		t.Errorf("notifier fired %d times for one crossing, want 1", got)
	}
}
