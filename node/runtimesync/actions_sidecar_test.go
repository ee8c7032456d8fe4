package runtimesync

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/backoff"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

// withSidecars makes the named init containers of pod sidecars.
func withSidecars(pod *corev1.Pod, names ...string) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	for i := range pod.Spec.InitContainers {
		for _, n := range names {
			if pod.Spec.InitContainers[i].Name == n {
				pod.Spec.InitContainers[i].RestartPolicy = &always
			}
		}
	}
	return pod
}

func withEphemeral(pod *corev1.Pod, names ...string) *corev1.Pod {
	for _, n := range names {
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: n, Image: "busybox"}})
	}
	return pod
}

func withContainerPolicy(pod *corev1.Pod, name string, policy corev1.ContainerRestartPolicy, rules ...corev1.ContainerRestartRule) *corev1.Pod {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			pod.Spec.Containers[i].RestartPolicy = &policy
			pod.Spec.Containers[i].RestartPolicyRules = rules
		}
	}
	return pod
}

func TestComputeActionsSidecarsEphemeralAndRules(t *testing.T) {
	always, onFailure, never := corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever
	sb := []podstate.Sandbox{ready("sb1", 0)}
	running, exited := podstate.ContainerRunning, podstate.ContainerExited
	initWaiting := map[string]Waiting{"app": {Reason: "PodInitializing"}}
	restartOn42 := corev1.ContainerRestartRule{Action: corev1.ContainerRestartRuleActionRestart,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}
	cases := []struct {
		name     string
		pod      *corev1.Pod
		status   *podstate.PodStatus
		unstated map[string]bool // running instances whose startup probe has not succeeded
		// restarted: as in TestComputeActions.
		restarted map[string]time.Duration
		want      Actions
	}{
		{
			name:   "sidecar started: the next init container starts",
			pod:    withSidecars(testPod(always, []string{"proxy", "setup"}, "app"), "proxy"),
			status: podStatus(sb, ctr("p1", "proxy", running, 0, 0, 0)),
			want: Actions{SandboxID: "sb1", Start: []ContainerStart{{Name: "setup", Init: true, Index: 1}},
				Waiting: initWaiting},
		},
		{
			name:     "sidecar not past its startup probe: the next one waits",
			pod:      withSidecars(testPod(always, []string{"proxy", "setup"}, "app"), "proxy"),
			status:   podStatus(sb, ctr("p1", "proxy", running, 0, 0, 0)),
			unstated: map[string]bool{"p1": true},
			want:     Actions{SandboxID: "sb1", Waiting: initWaiting},
		},
		{
			name:   "last init container is a started sidecar: the app starts beside it",
			pod:    withSidecars(testPod(never, []string{"setup", "proxy"}, "app"), "proxy"),
			status: podStatus(sb, ctr("s1", "setup", exited, 0, 0, time.Minute), ctr("p1", "proxy", running, 0, 0, 0)),
			want:   Actions{SandboxID: "sb1", Start: []ContainerStart{{Name: "app"}}},
		},
		{
			name: "sidecar crashed while the app runs: restarted even under restartPolicy Never",
			pod:  withSidecars(testPod(never, []string{"proxy"}, "app"), "proxy"),
			status: podStatus(sb, ctr("p1", "proxy", exited, 0, 1, time.Hour),
				ctr("a1", "app", running, 0, 0, 0)),
			want: Actions{SandboxID: "sb1", Start: []ContainerStart{{Name: "proxy", Init: true, RestartCount: 1}}},
		},
		{
			name: "sidecar crashed just now: it waits out its back-off, the app keeps running",
			pod:  withSidecars(testPod(always, []string{"proxy"}, "app"), "proxy"),
			status: podStatus(sb, ctr("p1", "proxy", exited, 1, 1, time.Second),
				ctr("a1", "app", running, 0, 0, 0)),
			restarted: map[string]time.Duration{"proxy": 3 * time.Second},
			want: Actions{SandboxID: "sb1", RetryAfter: 9 * time.Second, Waiting: map[string]Waiting{"proxy": {Reason: "CrashLoopBackOff",
				Message: "back-off 10s restarting failed container=proxy pod=web_ns(uid-1)"}}},
		},
		{
			name: "job-like pod: the app finished, the sidecar is stopped with the pod, not restarted",
			pod:  withSidecars(testPod(onFailure, []string{"proxy"}, "app"), "proxy"),
			status: podStatus(sb, ctr("p1", "proxy", running, 0, 0, 0),
				ctr("a1", "app", exited, 0, 0, time.Second)),
			want: Actions{SandboxID: "sb1", KillPod: true},
		},
		{
			name: "job-like pod done, sidecar already crashed: not restarted",
			pod:  withSidecars(testPod(never, []string{"proxy"}, "app"), "proxy"),
			status: podStatus(sb, ctr("p1", "proxy", exited, 0, 1, time.Hour),
				ctr("a1", "app", exited, 0, 1, time.Second)),
			want: Actions{SandboxID: "sb1", KillPod: true},
		},
		{
			name: "an earlier sidecar crashed while a later init container runs: both go on",
			pod:  withSidecars(testPod(always, []string{"proxy", "setup"}, "app"), "proxy"),
			status: podStatus(sb, ctr("p1", "proxy", exited, 0, 1, time.Hour),
				ctr("s1", "setup", running, 0, 0, 0)),
			want: Actions{SandboxID: "sb1", Start: []ContainerStart{{Name: "proxy", Init: true, RestartCount: 1}}, Waiting: initWaiting},
		},
		{
			name:   "ephemeral container added to a running pod: started, even before initialization",
			pod:    withEphemeral(testPod(always, []string{"setup"}, "app"), "debug"),
			status: podStatus(sb, ctr("s1", "setup", running, 0, 0, 0)),
			want:   Actions{SandboxID: "sb1", Start: []ContainerStart{{Name: "debug", Ephemeral: true}}, Waiting: initWaiting},
		},
		{
			name: "ephemeral container that exited: never restarted",
			pod:  withEphemeral(testPod(always, nil, "app"), "debug"),
			status: podStatus(sb, ctr("d1", "debug", exited, 0, 1, time.Hour),
				ctr("a1", "app", running, 0, 0, 0)),
			want: Actions{SandboxID: "sb1"},
		},
		{
			name:   "container policy Never in an Always pod: not restarted",
			pod:    withContainerPolicy(testPod(always, nil, "app", "web"), "app", corev1.ContainerRestartPolicyNever),
			status: podStatus(sb, ctr("a1", "app", exited, 0, 1, time.Hour), ctr("w1", "web", running, 0, 0, 0)),
			want:   Actions{SandboxID: "sb1"},
		},
		{
			name:   "restart rule In [42] matches: restarted although the policy is Never",
			pod:    withContainerPolicy(testPod(never, nil, "app"), "app", corev1.ContainerRestartPolicyNever, restartOn42),
			status: podStatus(sb, ctr("a1", "app", exited, 0, 42, time.Hour)),
			want:   Actions{SandboxID: "sb1", Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name:   "restart rule In [42] does not match exit 1: the pod is done",
			pod:    withContainerPolicy(testPod(never, nil, "app"), "app", corev1.ContainerRestartPolicyNever, restartOn42),
			status: podStatus(sb, ctr("a1", "app", exited, 0, 1, time.Hour)),
			want:   Actions{SandboxID: "sb1", KillPod: true},
		},
		{
			name:   "container policy Always in a Never pod: its sandbox is re-created",
			pod:    withContainerPolicy(testPod(never, nil, "app"), "app", corev1.ContainerRestartPolicyAlways),
			status: podStatus([]podstate.Sandbox{{ID: "sb1", State: podstate.SandboxNotReady}}, ctr("a1", "app", exited, 0, 0, time.Hour)),
			want: Actions{CreateSandbox: true, KillPod: true, Attempt: 1, SandboxReason: podstate.SandboxMsgNotReady,
				Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Inputs{Pod: tc.pod, Status: tc.status, Now: now, Backoff: backoff.NewRestarts(backoff.Config{}), Hash: hash,
				Started: func(id string) bool { return !tc.unstated[id] }}
			seedRestarts(in, tc.restarted)
			got := ComputeActions(in)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}
