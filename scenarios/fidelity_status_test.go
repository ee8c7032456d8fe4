package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lockstep-dev/lockstep/fakecri"
	"github.com/lockstep-dev/lockstep/sim/apiserver"
	"github.com/lockstep-dev/lockstep/sim/harness"
)

// Scenarios for the pod and node status fields the upstream kubelet
// v1.37.2 writes, found different by the differential harness (issue 27,
// docs/fidelity.md "Differences by cause": S*, N*, E11).

// agentStatuses returns every status the agent wrote for pod name of
// namespace default, oldest first.
func agentStatuses(h *harness.Harness, name string) []corev1.PodStatus {
	var out []corev1.PodStatus
	for _, r := range h.API.History() {
		if r.Kind == apiserver.KindPod && r.Actor == apiserver.ActorAgent && r.Name == name && r.Pod != nil &&
			r.Verb == apiserver.VerbPatchStatus {
			out = append(out, r.Pod.Status)
		}
	}
	return out
}

// TestFidelityVolumeMountStatuses (S10): every container status, init
// containers' included, lists the container's spec mounts (name, path,
// readOnly, and for a read-only one its resolved recursiveReadOnly,
// Disabled on a runtime without recursive read-only mounts) in every
// status the agent writes, as upstream's convertToAPIContainerStatuses.
func TestFidelityVolumeMountStatuses(t *testing.T) {
	h := start(t, 2701)
	rro := corev1.RecursiveReadOnlyIfPossible
	info := corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}
	mustCreate(t, h, NewPod("mounts", h.NodeName, Init("setup", 500*time.Millisecond, 0),
		WithVolume(info), WithVolume(emptyDir("data")),
		Mounts("setup", "data", "/data"), Mounts("app", "info", "/etc/podinfo"),
		func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data", ReadOnly: true, RecursiveReadOnly: &rro})
		}))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "mounts", corev1.PodRunning, true) })

	disabled := corev1.RecursiveReadOnlyDisabled
	want := map[string][]corev1.VolumeMountStatus{
		"setup": {{Name: "data", MountPath: "/data"}},
		"app": {{Name: "info", MountPath: "/etc/podinfo"},
			{Name: "data", MountPath: "/data", ReadOnly: true, RecursiveReadOnly: &disabled}},
	}
	writes := agentStatuses(h, "mounts")
	if len(writes) == 0 {
		t.Fatal("the agent wrote no status")
	}
	for i, s := range writes {
		got := map[string][]corev1.VolumeMountStatus{}
		for _, cs := range append(append([]corev1.ContainerStatus(nil), s.InitContainerStatuses...), s.ContainerStatuses...) {
			got[cs.Name] = cs.VolumeMounts
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("status write %d of %d (phase %s): volumeMounts (-want +got):\n%s", i+1, len(writes), s.Phase, diff)
		}
	}
}

// TestFidelityReadinessGateMessage (S6): a pod whose readiness gate has no
// condition is not Ready, with upstream's message for it; once the gate's
// condition is False, with upstream's message for that.
func TestFidelityReadinessGateMessage(t *testing.T) {
	h := start(t, 2702)
	mustCreate(t, h, NewPod("gated", h.NodeName, func(p *corev1.Pod) {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}}
	}))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "gated", corev1.PodRunning, false) })
	runUntil(t, h, "its containers are ready", time.Minute, func() bool {
		p, _ := APIPod(h, "default", "gated")
		return p != nil && conditionOf(p.Status, corev1.ContainersReady).Status == corev1.ConditionTrue
	})
	p, _ := APIPod(h, "default", "gated")
	got := conditionOf(p.Status, corev1.PodReady)
	want := corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "ReadinessGatesNotReady",
		Message: `corresponding condition of pod readiness gate "example.com/ready" does not exist.`}
	if diff := cmp.Diff(want, corev1.PodCondition{Status: got.Status, Reason: got.Reason, Message: got.Message}); diff != "" {
		t.Errorf("Ready (-want +got):\n%s", diff)
	}

	// A controller sets the gate's condition False: Ready stays False,
	// its message now says why (the kubelet reconciles on the message too).
	st := p.Status.DeepCopy()
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: "example.com/ready", Status: corev1.ConditionFalse})
	if _, err := h.API.User().SetPodStatus("default", "gated", *st); err != nil {
		t.Fatal(err)
	}
	want.Message = `the status of pod readiness gate "example.com/ready" is not "True", but False`
	runUntil(t, h, "Ready's message follows the gate", 30*time.Second, func() bool {
		p, _ := APIPod(h, "default", "gated")
		return p != nil && conditionOf(p.Status, corev1.PodReady).Message == want.Message
	})
}

// conditionOf returns the condition of type c in s (the zero condition
// when there is none).
func conditionOf(s corev1.PodStatus, c corev1.PodConditionType) corev1.PodCondition {
	for _, x := range s.Conditions {
		if x.Type == c {
			return x
		}
	}
	return corev1.PodCondition{}
}

// TestFidelityEphemeralStartedUnset (S9): an ephemeral container's status
// never sets started, while it waits, runs or after it exited, in any
// status the agent writes.
func TestFidelityEphemeralStartedUnset(t *testing.T) {
	h := start(t, 2703)
	mustCreate(t, h, NewPod("target", h.NodeName))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "target", corev1.PodRunning, true) })
	p, _ := APIPod(h, "default", "target")
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
		Env: []corev1.EnvVar{{Name: "FAKECRI_EXIT_AFTER", Value: "3s"}, {Name: "FAKECRI_EXIT_CODE", Value: "3"}},
	}}}
	if _, err := h.API.User().UpdateEphemeralContainers(p); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "the ephemeral container exited", time.Minute, func() bool {
		p, _ := APIPod(h, "default", "target")
		return len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Terminated != nil
	})
	seen := map[string]bool{}
	for _, s := range agentStatuses(h, "target") {
		for _, cs := range s.EphemeralContainerStatuses {
			state := "waiting"
			switch {
			case cs.State.Running != nil:
				state = "running"
			case cs.State.Terminated != nil:
				state = "terminated"
			}
			seen[state] = true
			if cs.Started != nil {
				t.Errorf("ephemeral container %s: started = %v, want unset", state, *cs.Started)
			}
		}
	}
	if !seen["running"] || !seen["terminated"] {
		t.Errorf("states written: %v, want running and terminated among them", seen)
	}
}

// TestFidelityRejectedPodStatus (S2, S5): a pod the node refuses at
// admission gets upstream's rejectPod status in every write: phase
// Failed, the reason, "Pod was rejected: " and admission's message, the
// QoS class, the pod's generation as observed and a start time; no
// conditions, no container statuses and no host IP. The Warning event
// carries admission's message alone.
func TestFidelityRejectedPodStatus(t *testing.T) {
	h := start(t, 2704)
	mustCreate(t, h, NewPod("sel", h.NodeName, func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{"disk": "nvme"}
	}))
	runUntil(t, h, "the pod is refused", time.Minute, func() bool { return PodIs(h, "default", "sel", corev1.PodFailed, false) })
	if err := h.K.RunFor(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	const msg = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
	writes := agentStatuses(h, "sel")
	if len(writes) == 0 {
		t.Fatal("the agent wrote no status")
	}
	for i, s := range writes {
		if s.StartTime == nil {
			t.Errorf("write %d: no start time", i+1)
		}
		s.StartTime = nil
		want := corev1.PodStatus{Phase: corev1.PodFailed, Reason: "NodeAffinity", Message: "Pod was rejected: " + msg,
			QOSClass: corev1.PodQOSBestEffort, ObservedGeneration: 1}
		if diff := cmp.Diff(want, s); diff != "" {
			t.Errorf("status write %d of %d (-want +got):\n%s", i+1, len(writes), diff)
		}
	}
	if ev := eventsAbout(h, "default", "sel"); !hasEvent(ev, "Warning NodeAffinity: ", msg) {
		t.Errorf("no Warning NodeAffinity event with admission's message; events: %q", ev)
	}
}

// TestFidelityNodeConditionsAndEvents (N2, E11, N3): the node's conditions
// carry the kubelet's messages, and the node's events are the kubelet's:
// Starting "Starting kubelet.", NodeAllocatableEnforced once kubepods is
// set up, then one "Node <node> status is now: …" per condition the
// registering status sets, in the kubelet's order.
func TestFidelityNodeConditionsAndEvents(t *testing.T) {
	h := start(t, 2705)
	runUntil(t, h, "the node is Ready", time.Minute, func() bool {
		nodes := h.API.User().Nodes()
		if len(nodes) != 1 {
			return false
		}
		for _, c := range nodes[0].Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
	if err := h.K.RunFor(10 * time.Second); err != nil { // the events' recorder sends them
		t.Fatal(err)
	}
	got := map[corev1.NodeConditionType]string{}
	for _, c := range h.API.User().Nodes()[0].Status.Conditions {
		got[c.Type] = string(c.Status) + " " + c.Reason + ": " + c.Message
	}
	want := map[corev1.NodeConditionType]string{
		corev1.NodeMemoryPressure: "False KubeletHasSufficientMemory: kubelet has sufficient memory available",
		corev1.NodeDiskPressure:   "False KubeletHasNoDiskPressure: kubelet has no disk pressure",
		corev1.NodePIDPressure:    "False KubeletHasSufficientPID: kubelet has sufficient PID available",
		corev1.NodeReady:          "True KubeletReady: kubelet is posting ready status",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node conditions (-want +got):\n%s", diff)
	}
	// N3: ephemeral-storage in the kubelet's form, a decimal quantity
	// (cAdvisor's byte count: "107374182400", not "100Gi").
	node := h.API.User().Nodes()[0]
	for name, list := range map[string]corev1.ResourceList{"capacity": node.Status.Capacity, "allocatable": node.Status.Allocatable} {
		if q := list[corev1.ResourceEphemeralStorage]; q.Format != resource.DecimalSI {
			t.Errorf("%s ephemeral-storage %s in format %s, want %s", name, q.String(), q.Format, resource.DecimalSI)
		}
	}
	var events []string
	for _, e := range h.API.User().Events() {
		if e.Object.Kind == "Node" {
			events = append(events, e.Type+" "+e.Reason+": "+e.Message)
		}
	}
	status := func(reason string) string {
		return "Normal " + reason + ": Node " + h.NodeName + " status is now: " + reason
	}
	wantEvents := []string{"Normal Starting: Starting kubelet.",
		"Normal NodeAllocatableEnforced: Updated Node Allocatable limit across pods",
		status("NodeHasSufficientMemory"), status("NodeHasNoDiskPressure"), status("NodeHasSufficientPID"), status("NodeReady")}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("node events (-want +got):\n%s", diff)
	}
}

// TestFidelityObservedGenerationAfterDelete (S5): a graceful delete bumps
// the pod's generation; every status the agent writes after it reports
// the new generation as observed (the status and its conditions), as
// upstream's status manager takes it from the pod it syncs.
func TestFidelityObservedGenerationAfterDelete(t *testing.T) {
	h := start(t, 2706)
	mustCreate(t, h, NewPod("web", h.NodeName, StopsAfter("app", 5*time.Second), Grace(30)))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "web", corev1.PodRunning, true) })
	if err := h.API.User().DeletePodGracefully("default", "web", nil); err != nil {
		t.Fatal(err)
	}
	var deleted bool
	var deletedAt, firstAt time.Time
	runUntil(t, h, "the pod is gone", time.Minute, func() bool { p, _ := APIPod(h, "default", "web"); return p == nil })
	var after []string
	for _, r := range h.API.History() {
		if r.Kind != apiserver.KindPod || r.Name != "web" {
			continue
		}
		if r.Verb == apiserver.VerbGracefulDelete {
			deleted, deletedAt = true, r.At
			if r.Pod.Generation != 2 {
				t.Fatalf("generation after the graceful delete: %d, want 2", r.Pod.Generation)
			}
			continue
		}
		if !deleted || r.Actor != apiserver.ActorAgent || r.Verb != apiserver.VerbPatchStatus {
			continue
		}
		if firstAt.IsZero() {
			firstAt = r.At
		}
		gens := fmt.Sprintf("%s status=%d", r.Pod.Status.Phase, r.Pod.Status.ObservedGeneration)
		for _, c := range r.Pod.Status.Conditions {
			gens += fmt.Sprintf(" %s=%d", c.Type, c.ObservedGeneration)
		}
		after = append(after, gens)
	}
	// The container takes 5 s to stop: the first write after the delete
	// is the Running pod observing generation 2, not its final status.
	if len(after) < 2 || !strings.HasPrefix(after[0], "Running ") {
		t.Errorf("writes after the delete: %q, want a Running one first, then the final one", after)
	}
	if d := firstAt.Sub(deletedAt); d > 2*time.Second {
		t.Errorf("first status write %v after the delete, want it within 2 s (the kubelet's: 0.4 s)", d)
	}
	for _, g := range after {
		if strings.Contains(g, "=1") {
			t.Errorf("status written after the delete observes generation 1: %s", g)
		}
	}
}

// TestFidelityUnknownEndMessage: a deleted pod whose container never
// started (its image absent under pullPolicy Never) ends with that
// container terminated ContainerStatusUnknown 137 and upstream's message
// (status_manager.go TerminatePod) in the last status written.
func TestFidelityUnknownEndMessage(t *testing.T) {
	h := start(t, 2707)
	mustCreate(t, h, NewPod("absent", h.NodeName, Image("app", "example.com/absent:v1", corev1.PullNever)))
	runUntil(t, h, "the container waits for its image", time.Minute, func() bool {
		r, _ := waitingReason(h, "absent")
		return r == "ErrImageNeverPull"
	})
	if err := h.API.User().DeletePodGracefully("default", "absent", nil); err != nil {
		t.Fatal(err)
	}
	runUntil(t, h, "the pod is gone", time.Minute, func() bool { p, _ := APIPod(h, "default", "absent"); return p == nil })
	writes := agentStatuses(h, "absent")
	last := writes[len(writes)-1]
	got := last.ContainerStatuses[0].State.Terminated
	want := &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown",
		Message: "The container could not be located when the pod was terminated"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the never-started container in the final status %s (-want +got):\n%s", last.Phase, diff)
	}
}

// TestFidelityNotReadyMessage (N2): a node NotReady for several causes
// says so as the kubelet's aggregated error prints them, in brackets; for
// one cause, without.
func TestFidelityNotReadyMessage(t *testing.T) {
	h := start(t, 2708)
	ready := func() corev1.NodeCondition {
		for _, n := range h.API.User().Nodes() {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					return c
				}
			}
		}
		return corev1.NodeCondition{}
	}
	runUntil(t, h, "the node is Ready", time.Minute, func() bool { return ready().Status == corev1.ConditionTrue })
	h.Runtime.SetRuntimeReady(false)
	const notReady = "container runtime not ready: RuntimeReady=false reason:FakeRuntimeNotReady message:fakecri: runtime set not ready"
	runUntil(t, h, "NotReady for the runtime", time.Minute, func() bool { return ready().Message == notReady })
	runUntil(t, h, "NotReady for two causes", 2*time.Minute, func() bool {
		return ready().Message == "[container runtime is down, "+notReady+"]"
	})
}

// TestFidelityVolumeMountStatusesOnARecursiveReadOnlyRuntime: on a runtime
// whose handler supports recursive read-only mounts, read-only mounts
// asking for Enabled or IfPossible report recursiveReadOnly Enabled (and
// are made so), a plain read-only one Disabled, as the kubelet resolves
// them from the handler's features (resolveRecursiveReadOnly).
func TestFidelityVolumeMountStatusesOnARecursiveReadOnlyRuntime(t *testing.T) {
	h := harness.New(harness.Config{
		Seed:    2702,
		Replay:  func(s uint64) string { return fmt.Sprintf("go test ./scenarios -run '^%s$' (seed %d)", t.Name(), s) },
		Runtime: fakecri.Config{RecursiveReadOnlyMounts: true},
	})
	t.Cleanup(h.Close)
	h.StartAgent()
	enabled, ifPossible, disabled := corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible, corev1.RecursiveReadOnlyDisabled
	mustCreate(t, h, NewPod("rro", h.NodeName, WithVolume(emptyDir("a")), WithVolume(emptyDir("b")), WithVolume(emptyDir("c")),
		func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.VolumeMounts = append(c.VolumeMounts,
				corev1.VolumeMount{Name: "a", MountPath: "/a", ReadOnly: true, RecursiveReadOnly: &enabled},
				corev1.VolumeMount{Name: "b", MountPath: "/b", ReadOnly: true, RecursiveReadOnly: &ifPossible},
				corev1.VolumeMount{Name: "c", MountPath: "/c", ReadOnly: true})
		}))
	runUntil(t, h, "the pod runs", time.Minute, func() bool { return PodIs(h, "default", "rro", corev1.PodRunning, true) })
	want := []corev1.VolumeMountStatus{
		{Name: "a", MountPath: "/a", ReadOnly: true, RecursiveReadOnly: &enabled},
		{Name: "b", MountPath: "/b", ReadOnly: true, RecursiveReadOnly: &enabled},
		{Name: "c", MountPath: "/c", ReadOnly: true, RecursiveReadOnly: &disabled},
	}
	p, _ := APIPod(h, "default", "rro")
	if diff := cmp.Diff(want, p.Status.ContainerStatuses[0].VolumeMounts); diff != "" {
		t.Errorf("volumeMounts (-want +got):\n%s", diff)
	}
	rroMounts := map[string]bool{}
	for _, ct := range PodContainers(h, p.UID) {
		for _, m := range h.Runtime.TrueMounts(ct.ID) {
			rroMounts[m.GetContainerPath()] = m.GetRecursiveReadOnly()
		}
	}
	if diff := cmp.Diff(map[string]bool{"/a": true, "/b": true, "/c": false}, rroMounts, cmpopts.IgnoreMapEntries(func(k string, _ bool) bool { return k != "/a" && k != "/b" && k != "/c" })); diff != "" {
		t.Errorf("recursive read-only mounts in the runtime (-want +got):\n%s", diff)
	}
}
