package runtimesync

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

func TestTargetNamespace(t *testing.T) {
	cfg := func(pid runtimeapi.NamespaceMode) *runtimeapi.ContainerConfig {
		return &runtimeapi.ContainerConfig{Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: pid}}}}
	}
	pod := withEphemeral(testPod(corev1.RestartPolicyAlways, nil, "app"), "debug", "plain")
	pod.Spec.EphemeralContainers[0].TargetContainerName = "app"
	running := podStatus(nil, ctr("a1", "app", podstate.ContainerRunning, 0, 0, 0))
	exited := podStatus(nil, ctr("a1", "app", podstate.ContainerExited, 0, 0, 0))
	cases := []struct {
		name    string
		index   int
		st      *podstate.PodStatus
		pid     runtimeapi.NamespaceMode
		wantPid runtimeapi.NamespaceMode
		wantID  string
	}{
		{"target running: its namespace", 0, running, runtimeapi.NamespaceMode_CONTAINER, runtimeapi.NamespaceMode_TARGET, "a1"},
		{"no target: own namespace", 1, running, runtimeapi.NamespaceMode_CONTAINER, runtimeapi.NamespaceMode_CONTAINER, ""},
		{"target not running: own namespace", 0, exited, runtimeapi.NamespaceMode_CONTAINER, runtimeapi.NamespaceMode_CONTAINER, ""},
		{"shared pod namespace kept", 0, running, runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_POD, ""},
	}
	for _, tc := range cases {
		c := cfg(tc.pid)
		joinTarget(c, targetID(pod, tc.st, tc.index))
		ns := c.Linux.SecurityContext.NamespaceOptions
		if ns.Pid != tc.wantPid || ns.TargetId != tc.wantID {
			t.Errorf("%s: pid %v target %q, want %v %q", tc.name, ns.Pid, ns.TargetId, tc.wantPid, tc.wantID)
		}
	}
}
