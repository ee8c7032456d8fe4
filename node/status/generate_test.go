package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
	"github.com/lockstep-dev/lockstep/node/podutil"
)

// TestRestartPolicyTruthTable is the invariant-level table: one container
// that exited with 0 or 1 under each restart policy, with and without the
// sync saying it waits in back-off.
func TestRestartPolicyTruthTable(t *testing.T) {
	backoff := map[string]Waiting{"app": {Reason: podutil.ReasonCrashLoopBackOff, Message: "back-off 10s"}}
	tests := []struct {
		policy  corev1.RestartPolicy
		code    int32
		waiting map[string]Waiting
		phase   corev1.PodPhase
		state   string
	}{
		{corev1.RestartPolicyNever, 0, nil, corev1.PodSucceeded, "terminated:0:Completed"},
		{corev1.RestartPolicyNever, 1, nil, corev1.PodFailed, "terminated:1:Error"},
		// A back-off reason for a container that never restarts is ignored.
		{corev1.RestartPolicyNever, 1, backoff, corev1.PodFailed, "terminated:1:Error"},
		{corev1.RestartPolicyOnFailure, 0, nil, corev1.PodSucceeded, "terminated:0:Completed"},
		{corev1.RestartPolicyOnFailure, 0, backoff, corev1.PodSucceeded, "terminated:0:Completed"},
		{corev1.RestartPolicyOnFailure, 1, nil, corev1.PodRunning, "terminated:1:Error"},
		{corev1.RestartPolicyOnFailure, 1, backoff, corev1.PodRunning, "waiting:CrashLoopBackOff/last:1:Error"},
		{corev1.RestartPolicyAlways, 0, nil, corev1.PodRunning, "terminated:0:Completed"},
		{corev1.RestartPolicyAlways, 0, backoff, corev1.PodRunning, "waiting:CrashLoopBackOff/last:0:Completed"},
		{corev1.RestartPolicyAlways, 1, nil, corev1.PodRunning, "terminated:1:Error"},
		{corev1.RestartPolicyAlways, 1, backoff, corev1.PodRunning, "waiting:CrashLoopBackOff/last:1:Error"},
	}
	for _, tc := range tests {
		name := string(tc.policy) + "/exit" + itoa(tc.code)
		if tc.waiting != nil {
			name += "/backoff"
		}
		t.Run(name, func(t *testing.T) {
			pod := newPod(tc.policy, "app")
			rs := world(true, exited("app", "c1", 0, 1, 5, tc.code, ""))
			s := Generate(pod, rs, tc.waiting, nil, node, at(6))
			if s.Phase != tc.phase {
				t.Errorf("phase = %s, want %s", s.Phase, tc.phase)
			}
			if got := stateOf(s.ContainerStatuses[0]); got != tc.state {
				t.Errorf("state = %s, want %s", got, tc.state)
			}
			if p := Phase(pod, s.InitContainerStatuses, s.ContainerStatuses); p != tc.phase {
				t.Errorf("Phase() = %s, want %s", p, tc.phase)
			}
		})
	}
}

func TestPhaseTable(t *testing.T) {
	run := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	term := func(code int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
	wait := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: podutil.ReasonContainerCreating}}
	st := func(name string, s corev1.ContainerState) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: s}
	}
	backoff := func(name string, last int32) corev1.ContainerStatus {
		cs := st(name, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: podutil.ReasonCrashLoopBackOff}})
		cs.LastTerminationState = term(last)
		return cs
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		init, cs []corev1.ContainerStatus
		want     corev1.PodPhase
	}{
		{"nothing yet", newPod(corev1.RestartPolicyAlways, "a"), nil, nil, corev1.PodPending},
		{"creating", newPod(corev1.RestartPolicyAlways, "a"), nil, []corev1.ContainerStatus{st("a", wait)}, corev1.PodPending},
		{"one running one creating", newPod(corev1.RestartPolicyAlways, "a", "b"), nil,
			[]corev1.ContainerStatus{st("a", run), st("b", wait)}, corev1.PodPending},
		{"one running one exited 0", newPod(corev1.RestartPolicyNever, "a", "b"), nil,
			[]corev1.ContainerStatus{st("a", run), st("b", term(0))}, corev1.PodRunning},
		{"never: one failed one succeeded", newPod(corev1.RestartPolicyNever, "a", "b"), nil,
			[]corev1.ContainerStatus{st("a", term(1)), st("b", term(0))}, corev1.PodFailed},
		{"onfailure: one failed in back-off one succeeded", newPod(corev1.RestartPolicyOnFailure, "a", "b"), nil,
			[]corev1.ContainerStatus{backoff("a", 1), st("b", term(0))}, corev1.PodRunning},
		{"always: all succeeded", newPod(corev1.RestartPolicyAlways, "a", "b"), nil,
			[]corev1.ContainerStatus{st("a", term(0)), st("b", term(0))}, corev1.PodRunning},
		{"init running", withInit(newPod(corev1.RestartPolicyNever, "a"), "i1", "i2"),
			[]corev1.ContainerStatus{st("i1", run), st("i2", wait)}, []corev1.ContainerStatus{st("a", wait)}, corev1.PodPending},
		{"init failed under never", withInit(newPod(corev1.RestartPolicyNever, "a"), "i1", "i2"),
			[]corev1.ContainerStatus{st("i1", term(0)), st("i2", term(2))}, []corev1.ContainerStatus{st("a", wait)}, corev1.PodFailed},
		{"init failed under onfailure", withInit(newPod(corev1.RestartPolicyOnFailure, "a"), "i1"),
			[]corev1.ContainerStatus{backoff("i1", 2)}, []corev1.ContainerStatus{st("a", wait)}, corev1.PodPending},
		{"init failed under always", withInit(newPod(corev1.RestartPolicyAlways, "a"), "i1"),
			[]corev1.ContainerStatus{st("i1", term(2))}, []corev1.ContainerStatus{st("a", wait)}, corev1.PodPending},
		{"init done, regular creating", withInit(newPod(corev1.RestartPolicyNever, "a"), "i1"),
			[]corev1.ContainerStatus{st("i1", term(0))}, []corev1.ContainerStatus{st("a", wait)}, corev1.PodPending},
		{"init done, regular running", withInit(newPod(corev1.RestartPolicyNever, "a"), "i1"),
			[]corev1.ContainerStatus{st("i1", term(0))}, []corev1.ContainerStatus{st("a", run)}, corev1.PodRunning},
		{"sidecar not started yet", sidecarPod(), []corev1.ContainerStatus{startedAs(st("side", run), false)},
			[]corev1.ContainerStatus{st("a", wait)}, corev1.PodPending},
		{"sidecar started, app running", sidecarPod(), []corev1.ContainerStatus{startedAs(st("side", run), true)},
			[]corev1.ContainerStatus{st("a", run)}, corev1.PodRunning},
		{"sidecar stopped, app succeeded", sidecarPod(), []corev1.ContainerStatus{st("side", term(143))},
			[]corev1.ContainerStatus{st("a", term(0))}, corev1.PodSucceeded},
		{"unknown final state under never is a failure", newPod(corev1.RestartPolicyNever, "a"), nil,
			[]corev1.ContainerStatus{st("a", term(ExitCodeUnknown))}, corev1.PodFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Phase(tc.pod, tc.init, tc.cs); got != tc.want {
				t.Errorf("Phase = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestInitContainersInOrder: init containers run one by one; a container
// not yet created, init or regular, waits as PodInitializing in a pod with
// init containers, as upstream's convertToAPIContainerStatuses reports it
// (the conformance spec "InitContainer should not start app containers and
// fail the pod if init containers fail on a RestartNever pod" checks it).
func TestInitContainersInOrder(t *testing.T) {
	pod := func(policy corev1.RestartPolicy) *corev1.Pod { return withInit(newPod(policy, "app"), "i1", "i2") }
	tests := []struct {
		name        string
		pod         *corev1.Pod
		rs          *podstate.PodStatus
		waiting     map[string]Waiting
		phase       corev1.PodPhase
		init, regs  []string
		initialized corev1.ConditionStatus
	}{
		{
			name: "no sandbox yet", pod: pod(corev1.RestartPolicyNever), rs: nil, phase: corev1.PodPending,
			init:        []string{"i1=waiting:PodInitializing", "i2=waiting:PodInitializing"},
			regs:        []string{"app=waiting:PodInitializing"},
			initialized: corev1.ConditionFalse,
		},
		{
			name: "first init running", pod: pod(corev1.RestartPolicyNever), rs: world(true, running("i1", "c1", 0, 1)),
			phase:       corev1.PodPending,
			init:        []string{"i1=running", "i2=waiting:PodInitializing"},
			regs:        []string{"app=waiting:PodInitializing"},
			initialized: corev1.ConditionFalse,
		},
		{
			name: "second init running", pod: pod(corev1.RestartPolicyNever),
			rs:          world(true, exited("i1", "c1", 0, 1, 2, 0, ""), running("i2", "c2", 0, 3)),
			phase:       corev1.PodPending,
			init:        []string{"i1=terminated:0:Completed", "i2=running"},
			regs:        []string{"app=waiting:PodInitializing"},
			initialized: corev1.ConditionFalse,
		},
		{
			name: "inits done", pod: pod(corev1.RestartPolicyNever),
			rs:          world(true, exited("i1", "c1", 0, 1, 2, 0, ""), exited("i2", "c2", 0, 3, 4, 0, "")),
			phase:       corev1.PodPending,
			init:        []string{"i1=terminated:0:Completed", "i2=terminated:0:Completed"},
			regs:        []string{"app=waiting:PodInitializing"},
			initialized: corev1.ConditionTrue,
		},
		{
			name: "app running", pod: pod(corev1.RestartPolicyNever),
			rs:          world(true, exited("i1", "c1", 0, 1, 2, 0, ""), exited("i2", "c2", 0, 3, 4, 0, ""), running("app", "c3", 0, 5)),
			phase:       corev1.PodRunning,
			init:        []string{"i1=terminated:0:Completed", "i2=terminated:0:Completed"},
			regs:        []string{"app=running"},
			initialized: corev1.ConditionTrue,
		},
		{
			name: "second init fails under never", pod: pod(corev1.RestartPolicyNever),
			rs:          world(true, exited("i1", "c1", 0, 1, 2, 0, ""), exited("i2", "c2", 0, 3, 4, 3, "")),
			phase:       corev1.PodFailed,
			init:        []string{"i1=terminated:0:Completed", "i2=terminated:3:Error"},
			regs:        []string{"app=waiting:PodInitializing"},
			initialized: corev1.ConditionFalse,
		},
		{
			name: "second init crash-looping under onfailure", pod: pod(corev1.RestartPolicyOnFailure),
			rs:          world(true, exited("i1", "c1", 0, 1, 2, 0, ""), exited("i2", "c2", 0, 3, 4, 3, "")),
			waiting:     map[string]Waiting{"i2": {Reason: podutil.ReasonCrashLoopBackOff}},
			phase:       corev1.PodPending,
			init:        []string{"i1=terminated:0:Completed", "i2=waiting:CrashLoopBackOff/last:3:Error"},
			regs:        []string{"app=waiting:PodInitializing"},
			initialized: corev1.ConditionFalse,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Generate(tc.pod, tc.rs, tc.waiting, nil, node, at(10))
			if s.Phase != tc.phase {
				t.Errorf("phase = %s, want %s", s.Phase, tc.phase)
			}
			if diff := cmp.Diff(tc.init, states(s.InitContainerStatuses)); diff != "" {
				t.Errorf("init statuses (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.regs, states(s.ContainerStatuses)); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if c := condStatus(s, corev1.PodInitialized); c == nil || c.Status != tc.initialized {
				t.Errorf("Initialized = %+v, want %s", c, tc.initialized)
			}
		})
	}
}

func TestCrashLoopBackOffStatus(t *testing.T) {
	pod := newPod(corev1.RestartPolicyAlways, "app")
	msg := "back-off 20s restarting failed container=app pod=ns/web(uid-web)" // runtimesync's, passed through
	rs := world(true,
		exited("app", "c1", 0, 1, 2, 1, ""),
		exited("app", "c2", 1, 12, 13, 2, ""),
	)
	s := Generate(pod, rs, map[string]Waiting{"app": {Reason: podutil.ReasonCrashLoopBackOff, Message: msg}}, nil, node, at(14))
	want := corev1.ContainerStatus{
		Name: "app",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: podutil.ReasonCrashLoopBackOff, Message: msg,
		}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 2, Reason: podutil.ReasonError, StartedAt: mt(12), FinishedAt: mt(13), ContainerID: "containerd://c2",
		}},
		RestartCount: 1,
		Image:        "img-app",
		ImageID:      "sha256:app",
		ContainerID:  "containerd://c2",
		Started:      ptr(false),
	}
	if diff := cmp.Diff([]corev1.ContainerStatus{want}, s.ContainerStatuses); diff != "" {
		t.Errorf("container status (-want +got):\n%s", diff)
	}
	if s.Phase != corev1.PodRunning {
		t.Errorf("phase = %s, want Running", s.Phase)
	}

	// The restart that follows: running, with the back-off's instance as
	// last termination.
	rs.Containers = append(rs.Containers, running("app", "c3", 2, 33))
	rs.Sort()
	s = Generate(pod, rs, nil, nil, node, at(34))
	if got, want := stateOf(s.ContainerStatuses[0]), "running/last:2:Error"; got != want {
		t.Errorf("state = %s, want %s", got, want)
	}
	if got := s.ContainerStatuses[0]; got.RestartCount != 2 || got.ContainerID != "containerd://c3" ||
		got.LastTerminationState.Terminated.ContainerID != "containerd://c2" {
		t.Errorf("restart count %d, id %s, last id %s; want 2, c3, c2", got.RestartCount, got.ContainerID, got.LastTerminationState.Terminated.ContainerID)
	}
}

func TestOOMKilledAndUnknown(t *testing.T) {
	tests := []struct {
		name  string
		c     podstate.Container
		phase corev1.PodPhase
		want  corev1.ContainerStateTerminated
	}{
		{
			name: "oom", c: exited("app", "c1", 0, 1, 5, 137, podutil.ReasonOOMKilled), phase: corev1.PodFailed,
			want: corev1.ContainerStateTerminated{ExitCode: 137, Reason: podutil.ReasonOOMKilled, StartedAt: mt(1), FinishedAt: mt(5), ContainerID: "containerd://c1"},
		},
		{
			name: "unknown is a failure, never a success", c: unknown("app", "c1", 0, 1), phase: corev1.PodFailed,
			want: corev1.ContainerStateTerminated{ExitCode: ExitCodeUnknown, Reason: podutil.ReasonContainerStatusUnknown,
				Message: MessageUnknownAtTermination, StartedAt: mt(1), ContainerID: "containerd://c1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Generate(newPod(corev1.RestartPolicyNever, "app"), world(true, tc.c), nil, nil, node, at(6))
			if s.Phase != tc.phase {
				t.Errorf("phase = %s, want %s", s.Phase, tc.phase)
			}
			if diff := cmp.Diff(&tc.want, s.ContainerStatuses[0].State.Terminated); diff != "" {
				t.Errorf("terminated (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVanishedRunningContainer covers upstream #58711: a container the
// previous status showed running disappears from the runtime. It must count
// as terminated with 137, so a Never pod fails instead of going back to
// Pending or, worse, succeeding.
func TestVanishedRunningContainer(t *testing.T) {
	pod := newPod(corev1.RestartPolicyNever, "app")
	pod.Status = Generate(pod, world(true, running("app", "c1", 0, 1)), nil, nil, node, at(2))
	if pod.Status.Phase != corev1.PodRunning {
		t.Fatalf("setup: phase %s", pod.Status.Phase)
	}
	s := Generate(pod, world(true), nil, nil, node, at(3))
	if got, want := stateOf(s.ContainerStatuses[0]), "waiting:ContainerCreating/last:137:ContainerStatusUnknown"; got != want {
		t.Errorf("state = %s, want %s", got, want)
	}
	if s.Phase != corev1.PodFailed {
		t.Errorf("phase = %s, want Failed", s.Phase)
	}
}

func TestTerminalPhaseNeverRegresses(t *testing.T) {
	tests := []struct {
		name   string
		prev   corev1.PodPhase
		rs     *podstate.PodStatus
		states []string
	}{
		{
			// Even if the runtime shows a new running instance (a bug
			// elsewhere), the status stays terminal.
			name: "succeeded then running instance", prev: corev1.PodSucceeded,
			rs:     world(true, exited("app", "c1", 0, 1, 2, 0, ""), running("app", "c2", 1, 5)),
			states: []string{"app=terminated:137:ContainerStatusUnknown/last:0:Completed"},
		},
		{
			name: "failed then exit 0 seen", prev: corev1.PodFailed,
			rs:     world(true, exited("app", "c1", 0, 1, 2, 0, "")),
			states: []string{"app=terminated:0:Completed"},
		},
		{
			name: "failed and the runtime lost everything", prev: corev1.PodFailed, rs: nil,
			states: []string{"app=terminated:1:Error"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod(corev1.RestartPolicyAlways, "app")
			pod.Status = Generate(pod, world(true, exited("app", "c1", 0, 1, 2, 1, "")), nil, nil, node, at(3))
			pod.Status.Phase = tc.prev
			pod.Status.Reason = "Evicted"
			s := Generate(pod, tc.rs, map[string]Waiting{"app": {Reason: podutil.ReasonCrashLoopBackOff}}, nil, node, at(10))
			if s.Phase != tc.prev || s.Reason != "Evicted" {
				t.Errorf("phase = %s (%s), want %s (Evicted)", s.Phase, s.Reason, tc.prev)
			}
			if diff := cmp.Diff(tc.states, states(s.ContainerStatuses)); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			wantReason := map[corev1.PodPhase]string{corev1.PodSucceeded: ReasonPodCompleted, corev1.PodFailed: ReasonPodFailed}[tc.prev]
			for _, ct := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
				if c := condStatus(s, ct); c.Status != corev1.ConditionFalse || c.Reason != wantReason {
					t.Errorf("%s = %s/%s, want False/%s", ct, c.Status, c.Reason, wantReason)
				}
			}
		})
	}
}

func TestReadinessAndConditions(t *testing.T) {
	pod := newPod(corev1.RestartPolicyAlways, "a", "b")
	rs := world(true, running("a", "ca", 0, 1), running("b", "cb", 0, 1))
	pr := probes{ready: map[string]bool{"ca": true}, started: map[string]bool{"ca": true, "cb": true}}

	s := Generate(pod, rs, nil, pr, node, at(5))
	ready := func(s corev1.PodStatus) []bool {
		return []bool{s.ContainerStatuses[0].Ready, s.ContainerStatuses[1].Ready}
	}
	if diff := cmp.Diff([]bool{true, false}, ready(s)); diff != "" {
		t.Errorf("ready (-want +got):\n%s", diff)
	}
	want := []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: mt(5), ObservedGeneration: 1},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: mt(5), ObservedGeneration: 1},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: ReasonContainersNotReady,
			Message: "containers with unready status: [b]", LastTransitionTime: mt(5), ObservedGeneration: 1},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: ReasonContainersNotReady,
			Message: "containers with unready status: [b]", LastTransitionTime: mt(5), ObservedGeneration: 1},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: mt(5), ObservedGeneration: 1},
	}
	if diff := cmp.Diff(want, s.Conditions); diff != "" {
		t.Errorf("conditions at 5s (-want +got):\n%s", diff)
	}

	// Nothing changes at 9 s: every transition time stays.
	pod.Status = s
	s = Generate(pod, rs, nil, pr, node, at(9))
	if diff := cmp.Diff(want, s.Conditions); diff != "" {
		t.Errorf("conditions at 9s (-want +got):\n%s", diff)
	}

	// b becomes ready at 12 s: only Ready and ContainersReady move.
	pod.Status = s
	pr.ready["cb"] = true
	s = Generate(pod, rs, nil, pr, node, at(12))
	for _, c := range s.Conditions {
		wantTime, wantStatus := mt(5), corev1.ConditionTrue
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			wantTime = mt(12)
		}
		if !c.LastTransitionTime.Equal(&wantTime) || c.Status != wantStatus {
			t.Errorf("%s = %s since %v, want %s since %v", c.Type, c.Status, c.LastTransitionTime, wantStatus, wantTime)
		}
	}

	// Not started yet: not ready either, whatever readiness says.
	pr.started["cb"] = false
	s = Generate(pod, rs, nil, pr, node, at(13))
	if got := s.ContainerStatuses[1]; *got.Started || got.Ready {
		t.Errorf("b not started: started=%v ready=%v, want false false", *got.Started, got.Ready)
	}

	// No probes: running means ready and started.
	s = Generate(pod, rs, nil, nil, node, at(14))
	if diff := cmp.Diff([]bool{true, true}, ready(s)); diff != "" {
		t.Errorf("ready without probes (-want +got):\n%s", diff)
	}
	if !*s.ContainerStatuses[0].Started {
		t.Errorf("started without probes = false")
	}
}

func TestReadinessGatesAndForeignConditions(t *testing.T) {
	pod := newPod(corev1.RestartPolicyAlways, "a")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	rs := world(true, running("a", "ca", 0, 1))

	s := Generate(pod, rs, nil, nil, node, at(5))
	if c := condStatus(s, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != ReasonReadinessGatesNotReady {
		t.Errorf("Ready without gate condition = %s/%s", c.Status, c.Reason)
	}
	if c := condStatus(s, corev1.ContainersReady); c.Status != corev1.ConditionTrue {
		t.Errorf("ContainersReady = %s, want True", c.Status)
	}

	foreign := corev1.PodCondition{Type: "example.com/lb", Status: corev1.ConditionTrue, LastTransitionTime: mt(3)}
	pod.Status = s
	pod.Status.Conditions = append([]corev1.PodCondition{foreign}, pod.Status.Conditions...)
	s = Generate(pod, rs, nil, nil, node, at(6))
	if c := condStatus(s, corev1.PodReady); c.Status != corev1.ConditionTrue {
		t.Errorf("Ready with gate True = %s (%s)", c.Status, c.Message)
	}
	if diff := cmp.Diff(foreign, s.Conditions[0]); diff != "" {
		t.Errorf("foreign condition not kept (-want +got):\n%s", diff)
	}
}

func TestPodLevelFields(t *testing.T) {
	pod := newPod(corev1.RestartPolicyAlways, "a")
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceCPU: mustQ("1"), corev1.ResourceMemory: mustQ("1Gi")},
	}
	s := Generate(pod, world(true, running("a", "ca", 0, 1)), nil, nil, node, at(5))
	want := corev1.PodStatus{
		HostIP:             "10.0.0.1",
		HostIPs:            []corev1.HostIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}},
		PodIP:              "10.1.0.5",
		PodIPs:             []corev1.PodIP{{IP: "10.1.0.5"}},
		StartTime:          &metav1.Time{Time: at(5)},
		QOSClass:           corev1.PodQOSGuaranteed,
		Phase:              corev1.PodRunning,
		ObservedGeneration: 1,
	}
	got := s
	got.Conditions, got.ContainerStatuses = nil, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod-level fields (-want +got):\n%s", diff)
	}

	// Later, the sandbox gone: start time and pod IP are kept.
	pod.Status = s
	s = Generate(pod, nil, nil, nil, node, at(50))
	if !s.StartTime.Equal(&metav1.Time{Time: at(5)}) || s.PodIP != "10.1.0.5" {
		t.Errorf("start time %v, pod IP %q: want kept", s.StartTime, s.PodIP)
	}
	if c := condStatus(s, corev1.PodReadyToStartContainers); c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Equal(&metav1.Time{Time: at(50)}) {
		t.Errorf("PodReadyToStartContainers = %s since %v, want False since 50s", c.Status, c.LastTransitionTime)
	} else if c.Reason != ReasonPodSandboxNotReady || c.Message != podstate.SandboxMsgNone {
		t.Errorf("PodReadyToStartContainers reason %q message %q, want %q %q", c.Reason, c.Message, ReasonPodSandboxNotReady, podstate.SandboxMsgNone)
	}

	// Host network: the node's IPs.
	pod.Spec.HostNetwork = true
	s = Generate(pod, world(true), nil, nil, node, at(51))
	if diff := cmp.Diff([]corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}, s.PodIPs); diff != "" || s.PodIP != "10.0.0.1" {
		t.Errorf("host network pod IPs %q (-want +got):\n%s", s.PodIP, diff)
	}
}

func TestDefaultRuntimeType(t *testing.T) {
	s := Generate(newPod(corev1.RestartPolicyAlways, "a"), world(true, running("a", "ca", 0, 1)), nil, nil, NodeAddrs{}, at(2))
	if got := s.ContainerStatuses[0].ContainerID; got != "cri://ca" {
		t.Errorf("ContainerID = %q, want cri://ca", got)
	}
}

func TestCreatedContainerWaits(t *testing.T) {
	pod := newPod(corev1.RestartPolicyAlways, "a")
	s := Generate(pod, world(true, created("a", "ca", 0, 1)), nil, nil, node, at(2))
	if got, want := stateOf(s.ContainerStatuses[0]), "waiting:ContainerCreating"; got != want {
		t.Errorf("state = %s, want %s", got, want)
	}
	s = Generate(pod, world(true, created("a", "ca", 0, 1)), map[string]Waiting{"a": {Reason: podutil.ReasonCreateContainerError, Message: "boom"}}, nil, node, at(2))
	if got, want := stateOf(s.ContainerStatuses[0]), "waiting:CreateContainerError"; got != want {
		t.Errorf("state = %s, want %s", got, want)
	}
	s = Generate(pod, nil, map[string]Waiting{"a": {Reason: podutil.ReasonImagePullBackOff}}, nil, node, at(2))
	if got, want := stateOf(s.ContainerStatuses[0]), "waiting:ImagePullBackOff"; got != want || s.Phase != corev1.PodPending {
		t.Errorf("state = %s (phase %s), want %s (Pending)", got, s.Phase, want)
	}
}

// TestRemovedAfterFinishing: an exited container garbage-collected from the
// runtime keeps its terminated status, so a finished Never pod stays
// Succeeded and does not fall back to Pending.
func TestRemovedAfterFinishing(t *testing.T) {
	pod := newPod(corev1.RestartPolicyOnFailure, "a", "b")
	pod.Status = Generate(pod, world(true, exited("a", "ca", 0, 1, 2, 0, ""), running("b", "cb", 0, 1)), nil, nil, node, at(3))
	s := Generate(pod, world(true, running("b", "cb", 0, 1)), nil, nil, node, at(4))
	if diff := cmp.Diff([]string{"a=terminated:0:Completed", "b=running"}, states(s.ContainerStatuses)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if s.Phase != corev1.PodRunning {
		t.Errorf("phase = %s, want Running", s.Phase)
	}
	// The restart count does not fall back when the instances it counted
	// are gone.
	pod.Status = s
	pod.Status.ContainerStatuses[1].RestartCount = 4
	s = Generate(pod, world(true, running("b", "cb", 0, 1)), nil, nil, node, at(5))
	if got := s.ContainerStatuses[1].RestartCount; got != 4 {
		t.Errorf("restart count = %d, want 4", got)
	}
}

func TestTerminate(t *testing.T) {
	backoff := func(last int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "b",
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: podutil.ReasonCrashLoopBackOff}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: last, Reason: "x"}}}
	}
	runningA := corev1.ContainerStatus{Name: "a", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(1)}}}
	doneA := corev1.ContainerStatus{Name: "a", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: podutil.ReasonCompleted}}}
	tests := []struct {
		name   string
		static bool
		phase  corev1.PodPhase
		cs     []corev1.ContainerStatus
		want   corev1.PodPhase
		states []string
	}{
		{"running becomes unknown", false, corev1.PodRunning, []corev1.ContainerStatus{runningA, backoff(0)}, corev1.PodFailed,
			[]string{"a=terminated:137:ContainerStatusUnknown", "b=terminated:0:x"}},
		{"all finished 0 under always", false, corev1.PodRunning, []corev1.ContainerStatus{doneA, backoff(0)}, corev1.PodSucceeded,
			[]string{"a=terminated:0:Completed", "b=terminated:0:x"}},
		{"missing status", false, corev1.PodPending, []corev1.ContainerStatus{doneA}, corev1.PodFailed,
			[]string{"a=terminated:0:Completed", "b=terminated:137:ContainerStatusUnknown"}},
		{"terminal kept", false, corev1.PodFailed, []corev1.ContainerStatus{doneA, backoff(0)}, corev1.PodFailed,
			[]string{"a=terminated:0:Completed", "b=terminated:0:x"}},
		{"static keeps live phase", true, corev1.PodRunning, []corev1.ContainerStatus{doneA, backoff(0)}, corev1.PodRunning,
			[]string{"a=terminated:0:Completed", "b=terminated:0:x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod(corev1.RestartPolicyAlways, "a", "b")
			if tc.static {
				pod.Annotations = map[string]string{podutil.AnnotationConfigSource: "file"}
			}
			in := corev1.PodStatus{Phase: tc.phase, ContainerStatuses: tc.cs, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt(1)},
			}}
			tc.cs = append([]corev1.ContainerStatus(nil), tc.cs...)
			for i := range tc.cs {
				tc.cs[i] = *tc.cs[i].DeepCopy()
			}
			out := Terminate(pod, in, at(9))
			if out.Phase != tc.want {
				t.Errorf("phase = %s, want %s", out.Phase, tc.want)
			}
			if diff := cmp.Diff(tc.states, states(out.ContainerStatuses)); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			for _, cs := range out.ContainerStatuses {
				if cs.Ready || *cs.Started {
					t.Errorf("%s ready=%v started=%v after Terminate", cs.Name, cs.Ready, *cs.Started)
				}
			}
			if c := condStatus(out, corev1.PodReady); podutil.IsTerminal(tc.want) && (c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Equal(&metav1.Time{Time: at(9)})) {
				t.Errorf("Ready = %s since %v, want False since 9s", c.Status, c.LastTransitionTime)
			}
			if diff := cmp.Diff(tc.cs, in.ContainerStatuses); diff != "" {
				t.Errorf("input mutated (-before +after):\n%s", diff)
			}
		})
	}
}

func TestCheckTransition(t *testing.T) {
	term := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "a", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	run := corev1.ContainerStatus{Name: "a", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	tests := []struct {
		name        string
		policy      corev1.RestartPolicy
		old, next   corev1.PodPhase
		oldC, nextC corev1.ContainerStatus
		wantRefusal bool
	}{
		{"running to succeeded", corev1.RestartPolicyNever, corev1.PodRunning, corev1.PodSucceeded, run, term(0), false},
		{"succeeded to running", corev1.RestartPolicyAlways, corev1.PodSucceeded, corev1.PodRunning, term(0), run, true},
		{"failed to succeeded", corev1.RestartPolicyNever, corev1.PodFailed, corev1.PodSucceeded, term(1), term(0), true},
		{"never container restarts", corev1.RestartPolicyNever, corev1.PodRunning, corev1.PodRunning, term(1), run, true},
		{"onfailure exit 0 restarts", corev1.RestartPolicyOnFailure, corev1.PodRunning, corev1.PodRunning, term(0), run, true},
		{"onfailure exit 1 restarts", corev1.RestartPolicyOnFailure, corev1.PodRunning, corev1.PodRunning, term(1), run, false},
		{"always restarts", corev1.RestartPolicyAlways, corev1.PodRunning, corev1.PodRunning, term(0), run, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod(tc.policy, "a")
			old := corev1.PodStatus{Phase: tc.old, ContainerStatuses: []corev1.ContainerStatus{tc.oldC}}
			next := corev1.PodStatus{Phase: tc.next, ContainerStatuses: []corev1.ContainerStatus{tc.nextC}}
			if err := checkTransition(pod, &old, &next); (err != nil) != tc.wantRefusal {
				t.Errorf("checkTransition = %v, want refusal %v", err, tc.wantRefusal)
			}
		})
	}
}

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }

// TestGenerateReportsTheQOSClass: the status reports the class podspec's
// one rule gives (upstream's GetPodQOS): the class the status already
// carries is kept, and a pod with pod-level limits only is Guaranteed, as
// its requests default to them.
func TestGenerateReportsTheQOSClass(t *testing.T) {
	both := corev1.ResourceList{corev1.ResourceCPU: mustQ("1"), corev1.ResourceMemory: mustQ("1Gi")}
	tests := []struct {
		name string
		edit func(*corev1.Pod)
		want corev1.PodQOSClass
	}{
		{"no resources", func(*corev1.Pod) {}, corev1.PodQOSBestEffort},
		{"container limits only", func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = both }, corev1.PodQOSGuaranteed},
		{"pod-level limits only", func(p *corev1.Pod) { p.Spec.Resources = &corev1.ResourceRequirements{Limits: both} }, corev1.PodQOSGuaranteed},
		{"the status's class is kept", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = both
			p.Status.QOSClass = corev1.PodQOSBestEffort
		}, corev1.PodQOSBestEffort},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod(corev1.RestartPolicyAlways, "a")
			tc.edit(pod)
			if got := Generate(pod, world(true, running("a", "ca", 0, 1)), nil, nil, node, at(5)).QOSClass; got != tc.want {
				t.Errorf("reported QOSClass = %s, want %s", got, tc.want)
			}
		})
	}
}

// sidecarPod is a Never pod with a restartable init container "side".
func sidecarPod() *corev1.Pod {
	p := withInit(newPod(corev1.RestartPolicyNever, "a"), "side")
	always := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers[0].RestartPolicy = &always
	return p
}

func startedAs(cs corev1.ContainerStatus, started bool) corev1.ContainerStatus {
	cs.Started = &started
	return cs
}

// TestTerminateMarksOnlyStartedContainers: as upstream, a container that
// never started gets no made-up termination: regular containers only once
// the pod initialized, init containers only up to the last one that started
// (the first always).
func TestTerminateMarksOnlyStartedContainers(t *testing.T) {
	waiting := func(name, reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}
	done := func(name string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "x"}}}
	}
	run := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(1)}}}
	}
	tests := []struct {
		name          string
		init, regular []corev1.ContainerStatus
		wantInit      []string
		wantRegular   []string
	}{
		{
			name:        "second init container running",
			init:        []corev1.ContainerStatus{done("i1", 0), run("i2"), waiting("i3", podutil.ReasonPodInitializing)},
			regular:     []corev1.ContainerStatus{waiting("a", podutil.ReasonPodInitializing)},
			wantInit:    []string{"i1=terminated:0:x", "i2=terminated:137:ContainerStatusUnknown", "i3=waiting:PodInitializing"},
			wantRegular: []string{"a=waiting:PodInitializing"},
		},
		{
			name:        "nothing started: only the first init container",
			init:        []corev1.ContainerStatus{waiting("i1", podutil.ReasonContainerCreating), waiting("i2", podutil.ReasonPodInitializing), waiting("i3", podutil.ReasonPodInitializing)},
			regular:     []corev1.ContainerStatus{waiting("a", podutil.ReasonPodInitializing)},
			wantInit:    []string{"i1=terminated:137:ContainerStatusUnknown", "i2=waiting:PodInitializing", "i3=waiting:PodInitializing"},
			wantRegular: []string{"a=waiting:PodInitializing"},
		},
		{
			name:        "init failed, the rest never ran",
			init:        []corev1.ContainerStatus{done("i1", 1), waiting("i2", podutil.ReasonPodInitializing), waiting("i3", podutil.ReasonPodInitializing)},
			regular:     []corev1.ContainerStatus{waiting("a", podutil.ReasonPodInitializing)},
			wantInit:    []string{"i1=terminated:1:x", "i2=waiting:PodInitializing", "i3=waiting:PodInitializing"},
			wantRegular: []string{"a=waiting:PodInitializing"},
		},
		{
			name:        "initialized: regular containers are finalized",
			init:        []corev1.ContainerStatus{done("i1", 0), done("i2", 0), done("i3", 0)},
			regular:     []corev1.ContainerStatus{waiting("a", podutil.ReasonContainerCreating)},
			wantInit:    []string{"i1=terminated:0:x", "i2=terminated:0:x", "i3=terminated:0:x"},
			wantRegular: []string{"a=terminated:137:ContainerStatusUnknown"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := withInit(newPod(corev1.RestartPolicyNever, "a"), "i1", "i2", "i3")
			in := corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: tc.init, ContainerStatuses: tc.regular}
			out := Terminate(pod, in, at(9))
			if diff := cmp.Diff(tc.wantInit, states(out.InitContainerStatuses)); diff != "" {
				t.Errorf("init statuses (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRegular, states(out.ContainerStatuses)); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if out.Phase != corev1.PodFailed {
				t.Errorf("phase = %s, want Failed", out.Phase)
			}
			// A later sync of the terminal pod keeps the same picture.
			pod.Status = out
			again := Generate(pod, nil, nil, nil, node, at(10))
			if diff := cmp.Diff(tc.wantRegular, states(again.ContainerStatuses)); diff != "" {
				t.Errorf("statuses after a later sync (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTerminalConditionReasons: Ready and ContainersReady of a Failed pod
// say PodFailed, of a Succeeded one PodCompleted (whose Initialized says
// PodCompleted too), as upstream.
func TestTerminalConditionReasons(t *testing.T) {
	for _, tc := range []struct {
		code       int32
		phase      corev1.PodPhase
		ready      string
		initReason string
	}{
		{0, corev1.PodSucceeded, ReasonPodCompleted, ReasonPodCompleted},
		{1, corev1.PodFailed, ReasonPodFailed, ""},
	} {
		pod := newPod(corev1.RestartPolicyNever, "app")
		s := Generate(pod, world(true, exited("app", "c1", 0, 1, 2, tc.code, "")), nil, nil, node, at(3))
		if s.Phase != tc.phase {
			t.Fatalf("exit %d: phase %s, want %s", tc.code, s.Phase, tc.phase)
		}
		got := map[corev1.PodConditionType]string{}
		for _, c := range s.Conditions {
			got[c.Type] = string(c.Status) + "/" + c.Reason
		}
		want := map[corev1.PodConditionType]string{
			corev1.PodReadyToStartContainers: "True/", corev1.PodScheduled: "True/",
			corev1.PodInitialized: "True/" + tc.initReason,
			corev1.PodReady:       "False/" + tc.ready, corev1.ContainersReady: "False/" + tc.ready,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("exit %d: conditions (-want +got):\n%s", tc.code, diff)
		}
		term := Terminate(pod, s, at(4))
		for _, ct := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
			if c := condStatus(term, ct); c.Reason != tc.ready {
				t.Errorf("exit %d: after Terminate %s reason %q, want %q", tc.code, ct, c.Reason, tc.ready)
			}
		}
	}
}
