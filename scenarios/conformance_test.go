package scenarios

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/sim/apiserver"
)

// TestBlockedContainerNeverReportedStarted mirrors the conformance spec
// "Pod Container Status should never report container start when an init
// container fails": pods whose init container exits 1 under restartPolicy
// Never are deleted after a varying delay (while the init container is
// being created, running, or already failed). In every status the agent
// writes, the regular container, blocked behind the failed init container,
// is waiting, not started, with no past termination.
func TestBlockedContainerNeverReportedStarted(t *testing.T) {
	h := start(t, 97)
	var bad []string
	h.API.OnWrite(func(r apiserver.Record) {
		if r.Kind != apiserver.KindPod || r.Actor != apiserver.ActorAgent || r.Pod == nil {
			return
		}
		for _, cs := range r.Pod.Status.ContainerStatuses {
			if cs.State.Waiting == nil || (cs.Started != nil && *cs.Started) || cs.LastTerminationState.Terminated != nil {
				bad = append(bad, fmt.Sprintf("%s rv %d: blocked container %q: state %+v started %v last %+v",
					r.Name, r.RV, cs.Name, cs.State, ptrStr(cs.Started), cs.LastTerminationState))
			}
		}
	})
	const pods = 15
	for i := range pods {
		name := fmt.Sprintf("initfail-%d", i)
		mustCreate(t, h, NewPod(name, h.NodeName, Restart(corev1.RestartPolicyNever), Init("fail", 500*time.Millisecond, 1)))
		if err := h.K.RunFor(time.Duration(i) * 150 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := h.API.User().DeletePodGracefully("default", name, nil); err != nil {
			t.Fatal(err)
		}
	}
	runUntil(t, h, "every pod deleted", 5*time.Minute, func() bool { return len(h.API.User().ListAllPods()) == 0 })
	for _, b := range bad {
		t.Error(b)
	}
}

func ptrStr(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

// TestReadinessGatesFollowOtherWriters mirrors the conformance spec "Pods
// should support pod readiness gates": another writer sets the gates'
// conditions through the status subresource, and the pod's Ready follows
// them: False with one gate True, True with both, False again when one
// turns False.
func TestReadinessGatesFollowOtherWriters(t *testing.T) {
	h := start(t, 98)
	gate1, gate2 := corev1.PodConditionType("k8s.io/test-condition1"), corev1.PodConditionType("k8s.io/test-condition2")
	pod := NewPod("gated", h.NodeName, func(p *corev1.Pod) {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: gate1}, {ConditionType: gate2}}
	})
	mustCreate(t, h, pod)
	ready := func() corev1.ConditionStatus {
		p, err := h.API.User().GetPod("default", "gated")
		if err != nil {
			return ""
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status
			}
		}
		return ""
	}
	containersReady := func() bool {
		p, err := h.API.User().GetPod("default", "gated")
		if err != nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.ContainersReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	runUntil(t, h, "containers ready", time.Minute, containersReady)
	if got := ready(); got != corev1.ConditionFalse {
		t.Fatalf("Ready = %q with no gate condition, want False", got)
	}
	setGate := func(t *testing.T, gate corev1.PodConditionType, s corev1.ConditionStatus) {
		t.Helper()
		p, err := h.API.User().GetPod("default", "gated")
		if err != nil {
			t.Fatal(err)
		}
		st := *p.Status.DeepCopy()
		found := false
		for i := range st.Conditions {
			if st.Conditions[i].Type == gate {
				st.Conditions[i].Status, found = s, true
			}
		}
		if !found {
			st.Conditions = append(st.Conditions, corev1.PodCondition{Type: gate, Status: s})
		}
		if _, err := h.API.User().SetPodStatus("default", "gated", st); err != nil {
			t.Fatal(err)
		}
	}
	setGate(t, gate1, corev1.ConditionTrue)
	if err := h.K.RunFor(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := ready(); got != corev1.ConditionFalse {
		t.Fatalf("Ready = %q with one gate True, want False", got)
	}
	setGate(t, gate2, corev1.ConditionTrue)
	runUntil(t, h, "Ready True with both gates True", 5*time.Second, func() bool { return ready() == corev1.ConditionTrue })
	setGate(t, gate1, corev1.ConditionFalse)
	runUntil(t, h, "Ready False with a gate False", 5*time.Second, func() bool { return ready() == corev1.ConditionFalse })
}
