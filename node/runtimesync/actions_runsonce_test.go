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

// TestComputeActionsRunsOnceNewSandbox covers the sandbox of a pod none of
// whose containers may run again (restartPolicy Never) dying: a new one
// runs what never ran (an instance created but never started did not run:
// upstream's kubernetes#118321), never what ran; init containers that
// succeeded are not run again, sidecars are.
func TestComputeActionsRunsOnceNewSandbox(t *testing.T) {
	never := corev1.RestartPolicyNever
	created, running, exited := podstate.ContainerCreated, podstate.ContainerRunning, podstate.ContainerExited
	noIP := []podstate.Sandbox{{ID: "sb1", State: podstate.SandboxReady, Attempt: 0, CreatedAt: now.Add(-time.Hour)}}
	dead := []podstate.Sandbox{{ID: "sb1", State: podstate.SandboxNotReady, Attempt: 0, CreatedAt: now.Add(-time.Hour)}}
	fresh := []podstate.Sandbox{ready("sb2", 1), {ID: "sb1", State: podstate.SandboxNotReady, Attempt: 0, CreatedAt: now.Add(-2 * time.Hour)}}
	in := func(c podstate.Container, sandbox string) podstate.Container { c.SandboxID = sandbox; return c }
	cases := []struct {
		name   string
		pod    *corev1.Pod
		status *podstate.PodStatus
		want   Actions
	}{
		{
			name:   "sandbox without IP, the container created but its start failed: a new sandbox runs it",
			pod:    testPod(never, nil, "app"),
			status: podStatus(noIP, in(ctr("c1", "app", created, 0, 0, 0), "sb1")),
			want: Actions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: podstate.SandboxMsgNoIP,
				Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name:   "sandbox stopped, the container still Created: a new sandbox runs it",
			pod:    testPod(never, nil, "app"),
			status: podStatus(dead, in(ctr("c1", "app", created, 0, 0, 0), "sb1")),
			want: Actions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: podstate.SandboxMsgNotReady,
				Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name: "one container exited, the other never started: only the other runs",
			pod:  testPod(never, nil, "app", "side"),
			status: podStatus(dead, in(ctr("c1", "app", exited, 0, 0, time.Minute), "sb1"),
				in(ctr("c2", "side", created, 0, 0, 0), "sb1")),
			want: Actions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: podstate.SandboxMsgNotReady,
				Start: []ContainerStart{{Name: "side", Index: 1, RestartCount: 1}}},
		},
		{
			name: "one container running (killed with the sandbox), the other never started: only the other runs",
			pod:  testPod(never, nil, "app", "side"),
			status: podStatus(noIP, in(ctr("c1", "app", running, 0, 0, 0), "sb1"),
				in(ctr("c2", "side", created, 0, 0, 0), "sb1")),
			want: Actions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: podstate.SandboxMsgNoIP,
				Start: []ContainerStart{{Name: "side", Index: 1, RestartCount: 1}}},
		},
		{
			name:   "every container running: killed, no new sandbox",
			pod:    testPod(never, nil, "app"),
			status: podStatus(noIP, in(ctr("c1", "app", running, 0, 0, 0), "sb1")),
			want:   Actions{KillPod: true},
		},
		{
			name: "init container succeeded, the app never started: the new sandbox starts the app, not the init container",
			pod:  testPod(never, []string{"setup"}, "app"),
			status: podStatus(dead, in(ctr("i1", "setup", exited, 0, 0, time.Minute), "sb1"),
				in(ctr("c1", "app", created, 0, 0, 0), "sb1")),
			want: Actions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: podstate.SandboxMsgNotReady,
				Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name:   "init container never started: the new sandbox runs it",
			pod:    testPod(never, []string{"setup"}, "app"),
			status: podStatus(dead, in(ctr("i1", "setup", created, 0, 0, 0), "sb1")),
			want: Actions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: podstate.SandboxMsgNotReady,
				Start: []ContainerStart{{Name: "setup", Init: true, RestartCount: 1}}},
		},
		{
			name:   "init container running (killed with the sandbox): it may not run again, no new sandbox",
			pod:    testPod(never, []string{"setup"}, "app"),
			status: podStatus(noIP, in(ctr("i1", "setup", running, 0, 0, 0), "sb1")),
			want:   Actions{KillPod: true},
		},
		{
			name:   "init container failed: no new sandbox",
			pod:    testPod(never, []string{"setup"}, "app"),
			status: podStatus(dead, in(ctr("i1", "setup", exited, 0, 1, time.Minute), "sb1")),
			want:   Actions{},
		},
		{
			name: "sidecar and succeeded init container: the new sandbox starts the sidecar first",
			pod:  withSidecars(testPod(never, []string{"proxy", "setup"}, "app"), "proxy"),
			status: podStatus(dead, in(ctr("p1", "proxy", running, 0, 0, 0), "sb1"),
				in(ctr("i1", "setup", exited, 0, 0, time.Minute), "sb1"), in(ctr("c1", "app", created, 0, 0, 0), "sb1")),
			want: Actions{KillPod: true, CreateSandbox: true, Attempt: 1, SandboxReason: podstate.SandboxMsgNotReady,
				Start: []ContainerStart{{Name: "proxy", Init: true, RestartCount: 1}}},
		},
		{
			name: "in the new sandbox, the sidecar started: the app, past the succeeded init container, and the old Created instance goes",
			pod:  withSidecars(testPod(never, []string{"proxy", "setup"}, "app"), "proxy"),
			status: podStatus(fresh, in(ctr("p2", "proxy", running, 1, 0, 0), "sb2"), in(ctr("p1", "proxy", exited, 0, 137, time.Minute), "sb1"),
				in(ctr("i1", "setup", exited, 0, 0, time.Minute), "sb1"), in(ctr("c1", "app", created, 0, 0, 0), "sb1")),
			want: Actions{SandboxID: "sb2", Kill: []ContainerKill{{ID: "c1", Name: "app", Reason: "created but never started", Remove: true}},
				Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
		{
			name: "in the new sandbox, no sidecar: the app, past the succeeded init container",
			pod:  testPod(never, []string{"setup"}, "app"),
			status: podStatus(fresh, in(ctr("i1", "setup", exited, 0, 0, time.Minute), "sb1"),
				in(ctr("c1", "app", created, 0, 0, 0), "sb1")),
			want: Actions{SandboxID: "sb2", Kill: []ContainerKill{{ID: "c1", Name: "app", Reason: "created but never started", Remove: true}},
				Start: []ContainerStart{{Name: "app", RestartCount: 1}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Inputs{Pod: tc.pod, Status: tc.status, Now: now, Backoff: backoff.NewRestarts(backoff.Config{}), Hash: hash}
			got := ComputeActions(in)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}
