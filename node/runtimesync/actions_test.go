package runtimesync

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

var now = time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)

func testPod(policy corev1.RestartPolicy, inits []string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}}
	p.Spec.RestartPolicy = policy
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox"})
	}
	for _, n := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "busybox"})
	}
	return p
}

func hash(c *corev1.Container) string { return "h-" + c.Image }

func ready(id string, attempt uint32) podstate.Sandbox {
	return podstate.Sandbox{ID: id, State: podstate.SandboxReady, Attempt: attempt, CreatedAt: now.Add(-time.Hour), IP: "10.0.0.1"}
}

func ctr(id, name string, state podstate.ContainerState, restarts int, exit int32, finishedAgo time.Duration) podstate.Container {
	c := podstate.Container{ID: id, Name: name, State: state, RestartCount: restarts, ExitCode: exit, Hash: "h-busybox",
		CreatedAt: now.Add(-time.Hour + time.Duration(restarts)*time.Second), StartedAt: now.Add(-finishedAgo - 2*time.Second)}
	if state == podstate.ContainerExited {
		c.FinishedAt = now.Add(-finishedAgo)
	}
	return c
}

func podStatus(sbs []podstate.Sandbox, cs ...podstate.Container) *podstate.PodStatus {
	s := &podstate.PodStatus{UID: "uid-1", Sandboxes: sbs, Containers: cs}
	s.Sort()
	return s
}

// seedRestarts records, for each named container, a restart after an
// exit the given time before in.Now, so that its next exit backs off.
func seedRestarts(in Inputs, restarted map[string]time.Duration) {
	for name, ago := range restarted {
		for _, s := range []ContainerStart{{Name: name}, {Name: name, Init: true}} {
			if c := containerSpec(in.Pod, s); c != nil && c.Name == name {
				in.Backoff.Next(BackoffKey(in.Pod, c), in.Now.Add(-ago), in.Now.Add(-ago))
				break
			}
		}
	}
}

// The kubelet's Killing messages of a probe kill (computePodActions).
const (
	failed           = "Container app failed liveness probe"
	restarted        = "Container app failed liveness probe, will be restarted"
	startupRestarted = "Container app failed startup probe, will be restarted"
)

func TestComputeActions(t *testing.T) {
	always, onFailure, never := corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever
	sb := []podstate.Sandbox{ready("sb1", 0)}
	dead := []podstate.Sandbox{{ID: "sb1", State: podstate.SandboxNotReady, Attempt: 0}}
	backoffMsg := "back-off 10s restarting failed container=app pod=web_ns(uid-1)"
	cases := []struct {
		name      string
		pod       *corev1.Pod
		status    *podstate.PodStatus
		terminal  bool
		unhealthy map[string]string
		// restarted: containers restarted after an earlier exit this long
		// ago (their back-off has an entry: the next exit waits 10 s).
		restarted map[string]time.Duration
		want      Actions
	}{
		{
			name: "new pod: create sandbox and start every container",
			pod:  testPod(always, nil, "app", "side"), status: podStatus(nil),
			want: Actions{CreateSandbox: true, SandboxReason: podstate.SandboxMsgNone, Start: []ContainerStart{{Name: "app"}, {Name: "side", Index: 1}}},
		},
		{
			name: "new pod with init containers: only the first init container",
			pod:  testPod(always, []string{"i1", "i2"}, "app"), status: podStatus(nil),
			want: Actions{CreateSandbox: true, SandboxReason: podstate.SandboxMsgNone, Start: []ContainerStart{{Name: "i1", Init: true}}},
		},
		{
			name: "sandbox died: kill the pod and recreate with the next attempt",
			pod:  testPod(always, nil, "app"), status: podStatus(dead, ctr("c1", "app", podstate.ContainerRunning, 0, 0, 0)),
			want: Actions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: podstate.SandboxMsgNotReady, Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name: "sandbox died, restartPolicy Never, containers ran: no new sandbox",
			pod:  testPod(never, nil, "app"), status: podStatus(dead, ctr("c1", "app", podstate.ContainerExited, 0, 0, time.Minute)),
			want: Actions{},
		},
		{
			name: "sandbox died, OnFailure: succeeded containers are not rerun",
			pod:  testPod(onFailure, nil, "done", "failed"),
			status: podStatus(dead, ctr("c1", "done", podstate.ContainerExited, 0, 0, time.Minute),
				ctr("c2", "failed", podstate.ContainerExited, 0, 1, time.Minute)),
			want: Actions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: podstate.SandboxMsgNotReady, Start: []ContainerStart{{Name: "failed", Index: 1, RestartCount: 1}}},
		},
		{
			name: "sandbox died, OnFailure, every container succeeded: no new sandbox, init containers not rerun",
			pod:  testPod(onFailure, []string{"setup"}, "app"),
			status: podStatus(dead, ctr("i1", "setup", podstate.ContainerExited, 0, 0, time.Minute),
				ctr("c1", "app", podstate.ContainerExited, 0, 0, time.Minute)),
			want: Actions{},
		},
		{
			name: "two sandboxes ready: kill the pod, recreate with the next attempt",
			pod:  testPod(always, nil, "app"),
			status: podStatus([]podstate.Sandbox{ready("sb2", 1), ready("sb1", 0)},
				ctr("c1", "app", podstate.ContainerRunning, 0, 0, 0)),
			want: Actions{KillPod: true, CreateSandbox: true, Attempt: 2, SandboxReason: podstate.SandboxMsgMultipleReady,
				Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name: "pod-network sandbox without IP: recreate",
			pod:  testPod(always, nil, "app"),
			status: podStatus([]podstate.Sandbox{{ID: "sb1", State: podstate.SandboxReady}},
				ctr("c1", "app", podstate.ContainerRunning, 0, 0, 0)),
			want: Actions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: podstate.SandboxMsgNoIP,
				Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name: "network namespace mode changed: recreate",
			pod: func() *corev1.Pod {
				p := testPod(always, nil, "app")
				p.Spec.HostNetwork = true
				return p
			}(),
			status: podStatus(sb, ctr("c1", "app", podstate.ContainerRunning, 0, 0, 0)),
			want: Actions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: podstate.SandboxMsgNetworkModeDiff,
				Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name: "host-network sandbox without IP is fine",
			pod: func() *corev1.Pod {
				p := testPod(always, nil, "app")
				p.Spec.HostNetwork = true
				return p
			}(),
			status: podStatus([]podstate.Sandbox{{ID: "sb1", State: podstate.SandboxReady, HostNetwork: true}},
				ctr("c1", "app", podstate.ContainerRunning, 0, 0, 0)),
			want: Actions{SandboxID: "sb1"},
		},
		{
			name: "running and healthy: nothing to do",
			pod:  testPod(always, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerRunning, 0, 0, 0)),
			want: Actions{SandboxID: "sb1"},
		},
		{
			name: "first exit under Always: restarted at once (no back-off entry yet, as upstream)",
			pod:  testPod(always, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerExited, 0, 1, time.Second)),
			want: Actions{SandboxID: "sb1", Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name: "crashed just now after a restart: CrashLoopBackOff",
			pod:  testPod(always, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerExited, 1, 1, time.Second)),
			restarted: map[string]time.Duration{"app": 3 * time.Second},
			want:      Actions{SandboxID: "sb1", RetryAfter: 9 * time.Second, Waiting: map[string]Waiting{"app": {"CrashLoopBackOff", backoffMsg}}},
		},
		{
			name: "crashed 11 s ago under Always: restart with the next count",
			pod:  testPod(always, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerExited, 3, 1, 11*time.Second)),
			want: Actions{SandboxID: "sb1", Start: []ContainerStart{{Name: "app", RestartCount: 4}}},
		},
		{
			name: "exit 0 under Always restarts too (after back-off)",
			pod:  testPod(always, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerExited, 0, 0, time.Minute)),
			want: Actions{SandboxID: "sb1", Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name: "exit 0 under OnFailure: done, stop the sandbox",
			pod:  testPod(onFailure, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerExited, 0, 0, time.Minute)),
			want: Actions{SandboxID: "sb1", KillPod: true},
		},
		{
			name: "exit 1 under OnFailure: restart",
			pod:  testPod(onFailure, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerExited, 0, 1, time.Minute)),
			want: Actions{SandboxID: "sb1", Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name: "exit 1 under Never: done, stop the sandbox",
			pod:  testPod(never, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerExited, 0, 1, time.Minute)),
			want: Actions{SandboxID: "sb1", KillPod: true},
		},
		{
			name: "one of two exited under Never: the other keeps running",
			pod:  testPod(never, nil, "a", "b"),
			status: podStatus(sb, ctr("c1", "a", podstate.ContainerExited, 0, 0, time.Minute),
				ctr("c2", "b", podstate.ContainerRunning, 0, 0, 0)),
			want: Actions{SandboxID: "sb1"},
		},
		{
			name:   "init container running: wait, regular containers PodInitializing",
			pod:    testPod(always, []string{"i1", "i2"}, "app"),
			status: podStatus(sb, ctr("c1", "i1", podstate.ContainerRunning, 0, 0, 0)),
			want:   Actions{SandboxID: "sb1", Waiting: map[string]Waiting{"app": {Reason: "PodInitializing"}}},
		},
		{
			name:   "first init done: start the second",
			pod:    testPod(always, []string{"i1", "i2"}, "app"),
			status: podStatus(sb, ctr("c1", "i1", podstate.ContainerExited, 0, 0, time.Minute)),
			want: Actions{SandboxID: "sb1", Start: []ContainerStart{{Name: "i2", Init: true, Index: 1}},
				Waiting: map[string]Waiting{"app": {Reason: "PodInitializing"}}},
		},
		{
			name:   "all init done: start the regular containers",
			pod:    testPod(always, []string{"i1"}, "app"),
			status: podStatus(sb, ctr("c1", "i1", podstate.ContainerExited, 0, 0, time.Minute)),
			want:   Actions{SandboxID: "sb1", Start: []ContainerStart{{Name: "app"}}},
		},
		{
			name:   "init failed under Never: the pod failed",
			pod:    testPod(never, []string{"i1"}, "app"),
			status: podStatus(sb, ctr("c1", "i1", podstate.ContainerExited, 0, 2, time.Minute)),
			want:   Actions{SandboxID: "sb1", InitFailed: true, KillPod: true},
		},
		{
			name:      "init failed under Always: retried under back-off, the rest waits",
			pod:       testPod(always, []string{"i1"}, "app"),
			status:    podStatus(sb, ctr("c1", "i1", podstate.ContainerExited, 1, 2, time.Second)),
			restarted: map[string]time.Duration{"i1": 3 * time.Second},
			want: Actions{SandboxID: "sb1", RetryAfter: 9 * time.Second, Waiting: map[string]Waiting{
				"i1":  {"CrashLoopBackOff", "back-off 10s restarting failed container=i1 pod=web_ns(uid-1)"},
				"app": {Reason: "PodInitializing"}}},
		},
		{
			name: "spec changed: kill and start a new instance",
			pod: func() *corev1.Pod {
				p := testPod(always, nil, "app")
				p.Spec.Containers[0].Image = "nginx"
				return p
			}(),
			status: podStatus(sb, ctr("c1", "app", podstate.ContainerRunning, 2, 0, 0)),
			want: Actions{SandboxID: "sb1", Kill: []ContainerKill{{ID: "c1", Name: "app", Reason: "container spec changed", Message: "Container app definition changed, will be restarted"}},
				Start: []ContainerStart{{Name: "app", RestartCount: 3}}},
		},
		{
			// Restarted by a later sync, once exited, after its back-off;
			// the sandbox stays.
			name: "liveness failed: kill and start again in one sync (no earlier exit: no back-off)",
			pod:  testPod(always, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerRunning, 0, 0, 0)),
			unhealthy: map[string]string{"c1": "liveness"},
			want: Actions{SandboxID: "sb1", Kill: []ContainerKill{{ID: "c1", Name: "app", Reason: restarted, Message: restarted}},
				Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name: "liveness failed again: the back-off is judged on the earlier exit (finished 30 s ago, 10 s back-off): restarted",
			pod:  testPod(always, nil, "app"),
			status: podStatus(sb, ctr("c2", "app", podstate.ContainerRunning, 1, 0, 0),
				ctr("c1", "app", podstate.ContainerExited, 0, 137, 30*time.Second)),
			unhealthy: map[string]string{"c2": "liveness"},
			restarted: map[string]time.Duration{"app": 29 * time.Second},
			want: Actions{SandboxID: "sb1", Kill: []ContainerKill{{ID: "c2", Name: "app", Reason: restarted, Message: restarted}},
				Start: []ContainerStart{{Name: "app", RestartCount: 2}}},
		},
		{
			name: "liveness failed under Never: kill, and the pod is done",
			pod:  testPod(never, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerRunning, 0, 0, 0)),
			unhealthy: map[string]string{"c1": "liveness"},
			want:      Actions{SandboxID: "sb1", KillPod: true, Kill: []ContainerKill{{ID: "c1", Name: "app", Reason: failed, Message: failed}}},
		},
		{
			// The kubelet's computePodActions: a probe kill under any
			// policy but Never starts the container again in the same
			// sync, whatever the exit code the kill will bring (a process
			// that exits 0 on SIGTERM runs again under OnFailure).
			name: "liveness failed under OnFailure: kill and start again in one sync",
			pod:  testPod(onFailure, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerRunning, 0, 0, 0)),
			unhealthy: map[string]string{"c1": "liveness"},
			want: Actions{SandboxID: "sb1", Kill: []ContainerKill{{ID: "c1", Name: "app", Reason: restarted, Message: restarted}},
				Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name: "startup failed under OnFailure: kill and start again in one sync",
			pod:  testPod(onFailure, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerRunning, 0, 0, 0)),
			unhealthy: map[string]string{"c1": "startup"},
			want: Actions{SandboxID: "sb1", Kill: []ContainerKill{{ID: "c1", Name: "app", Reason: startupRestarted, Message: startupRestarted}},
				Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			// After the exit 0 the kill brought, held by its back-off
			// (the earlier exit finished 5 s ago, 10 s back-off): a later
			// sync sees exit 0 under OnFailure and does not restart it,
			// as the kubelet's ShouldContainerBeRestarted does not.
			name: "liveness failed again under OnFailure within the back-off: killed, held in CrashLoopBackOff",
			pod:  testPod(onFailure, nil, "app"),
			status: podStatus(sb, ctr("c2", "app", podstate.ContainerRunning, 1, 0, 0),
				ctr("c1", "app", podstate.ContainerExited, 0, 0, 5*time.Second)),
			unhealthy: map[string]string{"c2": "liveness"},
			restarted: map[string]time.Duration{"app": 5 * time.Second},
			want: Actions{SandboxID: "sb1", Kill: []ContainerKill{{ID: "c2", Name: "app", Reason: restarted, Message: restarted}},
				Waiting: map[string]Waiting{"app": {Reason: "CrashLoopBackOff",
					Message: "back-off 10s restarting failed container=app pod=web_ns(uid-1)"}},
				RetryAfter: 5 * time.Second},
		},
		{
			// The container's own restartPolicy decides over the pod's:
			// Never keeps it dead (the pod is done), Always or OnFailure
			// restarts it in a Never pod.
			name:      "liveness failed, container restartPolicy Never in an Always pod: kill, the pod is done",
			pod:       withContainerPolicy(testPod(always, nil, "app"), "app", corev1.ContainerRestartPolicyNever),
			status:    podStatus(sb, ctr("c1", "app", podstate.ContainerRunning, 0, 0, 0)),
			unhealthy: map[string]string{"c1": "liveness"},
			want:      Actions{SandboxID: "sb1", KillPod: true, Kill: []ContainerKill{{ID: "c1", Name: "app", Reason: failed, Message: failed}}},
		},
		{
			name:      "liveness failed, container restartPolicy OnFailure in a Never pod: kill and start again",
			pod:       withContainerPolicy(testPod(never, nil, "app"), "app", corev1.ContainerRestartPolicyOnFailure),
			status:    podStatus(sb, ctr("c1", "app", podstate.ContainerRunning, 0, 0, 0)),
			unhealthy: map[string]string{"c1": "liveness"},
			want: Actions{SandboxID: "sb1", Kill: []ContainerKill{{ID: "c1", Name: "app", Reason: restarted, Message: restarted}},
				Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name: "created but never started: remove it, start the next attempt",
			pod:  testPod(always, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerCreated, 1, 0, 0)),
			want: Actions{SandboxID: "sb1", Kill: []ContainerKill{{ID: "c1", Name: "app", Reason: "created but never started", Remove: true}},
				Start: []ContainerStart{{Name: "app", RestartCount: 2}}},
		},
		{
			name:   "init container created but never started: remove it, start the next attempt",
			pod:    testPod(always, []string{"i1"}, "app"),
			status: podStatus(sb, ctr("c1", "i1", podstate.ContainerCreated, 0, 0, 0)),
			want: Actions{SandboxID: "sb1", Kill: []ContainerKill{{ID: "c1", Name: "i1", Reason: "created but never started", Remove: true}},
				Start:   []ContainerStart{{Name: "i1", Init: true, RestartCount: 1}},
				Waiting: map[string]Waiting{"app": {Reason: "PodInitializing"}}},
		},
		{
			name:   "sandbox died with a created container: the new sandbox takes the next attempt",
			pod:    testPod(always, nil, "app"),
			status: podStatus(dead, ctr("c1", "app", podstate.ContainerCreated, 0, 0, 0)),
			want:   Actions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: podstate.SandboxMsgNotReady, Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			// Found by the property test: a sync removed a stale Created
			// attempt 2, created attempt 3 and crashed before starting it;
			// the next agent started attempt 2 again. Attempt 3, older by
			// creation time, then held its name against every restart.
			name: "an older Created instance of a higher attempt: remove it, restart past it",
			pod:  testPod(always, nil, "app"),
			status: podStatus(sb, func() podstate.Container {
				c := ctr("c3", "app", podstate.ContainerCreated, 3, 0, 0)
				c.CreatedAt = now.Add(-2 * time.Hour)
				return c
			}(), ctr("c2", "app", podstate.ContainerExited, 2, 1, time.Hour)),
			want: Actions{SandboxID: "sb1", Kill: []ContainerKill{{ID: "c3", Name: "app", Reason: "created but never started", Remove: true}},
				Start: []ContainerStart{{Name: "app", RestartCount: 4}}},
		},
		{
			name: "unknown state: kill, then restart",
			pod:  testPod(always, nil, "app"), status: podStatus(sb, ctr("c1", "app", podstate.ContainerUnknown, 1, 0, 0)),
			want: Actions{SandboxID: "sb1", Kill: []ContainerKill{{ID: "c1", Name: "app", Reason: "state unknown", Message: `Container is in "unknown" state, try killing it before restart`}},
				Start: []ContainerStart{{Name: "app", RestartCount: 2}}},
		},
		{
			name: "terminal pod: never start, stop what runs",
			pod:  testPod(always, nil, "app"), terminal: true,
			status: podStatus(sb, ctr("c1", "app", podstate.ContainerExited, 0, 1, time.Hour)),
			want:   Actions{KillPod: true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Inputs{Pod: tc.pod, Status: tc.status, Terminal: tc.terminal, Now: now, Backoff: backoff.NewRestarts(backoff.Config{}), Hash: hash}
			seedRestarts(in, tc.restarted)
			if tc.unhealthy != nil {
				in.Unhealthy = func(id string) (ProbeKill, bool) { r, ok := tc.unhealthy[id]; return ProbeKill{Probe: r}, ok }
			}
			got := ComputeActions(in)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCrashLoopDelays follows one container through repeated crashes, as
// upstream's curve: the first restart at once, then the n-th waits
// 10 s·2ⁿ⁻² (≤ 300 s) after FinishedAt.
func TestCrashLoopDelays(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, "app")
	b := backoff.NewRestarts(backoff.Config{})
	sb := []podstate.Sandbox{ready("sb1", 0)}
	finished := now
	var delays []time.Duration
	for restart := range 8 {
		c := ctr("c", "app", podstate.ContainerExited, restart, 1, 0)
		c.StartedAt, c.FinishedAt = finished.Add(-2*time.Second), finished
		st := podStatus(sb, c)
		// Scan forward in 1 s steps until the restart is allowed.
		for at := finished; ; at = at.Add(time.Second) {
			acts := ComputeActions(Inputs{Pod: pod, Status: st, Now: at, Backoff: b, Hash: hash})
			if len(acts.Start) == 1 {
				delays = append(delays, at.Sub(finished))
				finished = at.Add(2 * time.Second) // runs 2 s, crashes again
				break
			}
			if acts.Waiting["app"].Reason != "CrashLoopBackOff" {
				t.Fatalf("restart %d at +%v: neither started nor in back-off: %+v", restart, at.Sub(finished), acts)
			}
		}
	}
	want := []time.Duration{0, 10, 20, 40, 80, 160, 300, 300}
	for i := range want {
		want[i] *= time.Second
	}
	if diff := cmp.Diff(want, delays); diff != "" {
		t.Errorf("restart delays after FinishedAt (-want +got):\n%s", diff)
	}
}

func TestBackoffKey(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, "app")
	base := pod.Spec.Containers[0]
	key := BackoffKey(pod, &base)
	if !strings.HasPrefix(key, "uid-1/app/") {
		t.Errorf("key %q does not start with the pod UID and container name", key)
	}
	tests := []struct {
		name    string
		mod     func(*corev1.Container)
		changes bool
	}{
		{"image", func(c *corev1.Container) { c.Image = "nginx" }, true},
		{"memory limit", func(c *corev1.Container) {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
		}, true},
		{"env", func(c *corev1.Container) { c.Env = []corev1.EnvVar{{Name: "A", Value: "b"}} }, false},
		{"command", func(c *corev1.Container) { c.Command = []string{"sh"} }, false},
	}
	for _, tt := range tests {
		c := base.DeepCopy()
		tt.mod(c)
		if changed := BackoffKey(pod, c) != key; changed != tt.changes {
			t.Errorf("%s: key changed = %v, want %v", tt.name, changed, tt.changes)
		}
	}
}

// TestImageFixEndsBackOff: a container deep in its crash-loop back-off
// whose image is changed starts again after the first step of a fresh
// back-off, not the old one.
func TestImageFixEndsBackOff(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, nil, "app")
	b := backoff.NewRestarts(backoff.Config{})
	sb := []podstate.Sandbox{ready("sb1", 0)}
	var restarted time.Time
	for restart := range 5 { // five restarts, each well past its back-off: it grows to 160 s
		c := ctr("c", "app", podstate.ContainerExited, restart, 1, 0)
		c.FinishedAt = now.Add(time.Duration(restart) * 6 * time.Minute)
		restarted = c.FinishedAt.Add(5 * time.Minute)
		ComputeActions(Inputs{Pod: pod, Status: podStatus(sb, c), Now: restarted, Backoff: b, Hash: hash})
	}
	last := ctr("c", "app", podstate.ContainerExited, 5, 1, 0)
	last.FinishedAt = restarted.Add(30 * time.Second)
	at := last.FinishedAt.Add(11 * time.Second)
	held := ComputeActions(Inputs{Pod: pod, Status: podStatus(sb, last), Now: at, Backoff: b, Hash: hash})
	if held.Waiting["app"].Reason != "CrashLoopBackOff" {
		t.Fatalf("same image 11 s after the 5th crash: %+v, want CrashLoopBackOff", held)
	}
	fixed := pod.DeepCopy()
	fixed.Spec.Containers[0].Image = "busybox:fixed"
	got := ComputeActions(Inputs{Pod: fixed, Status: podStatus(sb, last), Now: at, Backoff: b, Hash: hash})
	want := []ContainerStart{{Name: "app", RestartCount: 6}}
	if diff := cmp.Diff(want, got.Start); diff != "" {
		t.Errorf("starts after the image fix (-want +got):\n%s", diff)
	}
}

// A running sidecar whose spec changed is killed with the kubelet's
// message for an init container ("Init container <name> definition
// changed", no "will be restarted") and started again.
func TestSidecarSpecChangedKillMessage(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	p := testPod(corev1.RestartPolicyNever, []string{"side"}, "app")
	p.Spec.InitContainers[0].RestartPolicy = &always
	p.Spec.InitContainers[0].Image = "nginx"
	sb := ready("sb1", 0)
	acts := ComputeActions(Inputs{Pod: p, Status: podStatus([]podstate.Sandbox{sb}, ctr("c1", "side", podstate.ContainerRunning, 0, 0, 0)), Now: now,
		Backoff: backoff.NewRestarts(backoff.Config{}), Hash: hash})
	want := []ContainerKill{{ID: "c1", Name: "side", Reason: "container spec changed", Message: "Init container side definition changed"}}
	if diff := cmp.Diff(want, acts.Kill); diff != "" {
		t.Errorf("kills (-want +got):\n%s", diff)
	}
	if len(acts.Start) != 1 || acts.Start[0].Name != "side" || !acts.Start[0].Init {
		t.Errorf("starts %+v, want the sidecar started again", acts.Start)
	}
}
